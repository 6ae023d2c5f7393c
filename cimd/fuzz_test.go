package cimd

import (
	"bytes"
	"errors"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// addSeeds adds every testdata/*.json file (client_id set to specURL) and
// every bad document of the table tests.
func addSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		f.Add([]byte(readTestdata(f, filepath.Base(p))))
	}
	for _, d := range badDocs {
		f.Add([]byte(strings.ReplaceAll(d.body, "{{URL}}", specURL)))
	}
}

// checkStoredForm checks what any accepted metadata leads to: keys only
// for private_key_jwt, and a stored record at most about twice the input
// (U+2028 and U+2029 are the only characters the encoder writes longer
// than UTF-8), never the sixfold of HTML escaping.
func checkStoredForm(t *testing.T, d *Document, data []byte) {
	t.Helper()
	if (d.JWKS != nil || d.JWKSURI != "") && d.TokenEndpointAuthMethod != authMethodPrivateKeyJWT {
		t.Fatalf("accepted keys with method %q", d.TokenEndpointAuthMethod)
	}
	c := &Client{Document: *d, Source: sourceDCR}
	v, err := marshalNoEscape(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > 2*len(data)+512 {
		t.Fatalf("%d input bytes stored as %d", len(data), len(v))
	}
	if bytes.Contains(v, []byte(`\u003c`)) && !bytes.Contains(data, []byte(`\u003c`)) {
		t.Fatalf("stored form is HTML-escaped: %s", v)
	}
}

func FuzzDocument(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseDocument(data, specURL, cimdPolicy(false))
		if err != nil {
			if !errors.Is(err, errInvalidDocument) && !errors.Is(err, errClientIDMismatch) {
				t.Fatalf("unclassified error %v", err)
			}
			if d != nil {
				t.Fatal("document returned with an error")
			}
			return
		}
		if d.ClientID != specURL || d.ClientName == "" || len(d.RedirectURIs) == 0 || len(d.RedirectURIs) > maxRedirectURIs {
			t.Fatalf("accepted %+v", d)
		}
		if d.TokenEndpointAuthMethod != authMethodNone && d.TokenEndpointAuthMethod != authMethodPrivateKeyJWT {
			t.Fatalf("accepted auth method %q", d.TokenEndpointAuthMethod)
		}
		for _, u := range d.RedirectURIs {
			if checkRedirectURI(u, d.ApplicationType, false) != nil || !redirectURIAllowed(d.RedirectURIs, u) {
				t.Fatalf("accepted redirect uri %q", u)
			}
		}
		checkStoredForm(t, d, data)
		// What we accept, we accept again after re-encoding as the stores
		// do (not HTML-escaped), unchanged.
		b, err := marshalNoEscape(d)
		if err != nil {
			t.Fatal(err)
		}
		d2, err := parseDocument(b, specURL, cimdPolicy(false))
		if err != nil || !reflect.DeepEqual(d, d2) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, d, d2)
		}
	})
}

func FuzzDCRRequest(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(`{"redirect_uris":["com.example.app:/cb"],"application_type":"native","token_endpoint_auth_method":"none"}`))
	f.Add([]byte(`{"redirect_uris":["https://a.example/cb"],"grant_types":["client_credentials","refresh_token"],"response_types":[]}`))
	pol := policy{
		defaultAppType:    appTypeWeb,
		defaultAuthMethod: authMethodClientSecretBasic,
		authMethods:       []string{authMethodNone, authMethodClientSecretBasic, authMethodClientSecretPost, authMethodPrivateKeyJWT},
		allowPrivateUse:   true,
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseDCRRequest(data, pol)
		if err != nil {
			for _, s := range []error{errMalformed, errDuplicateMember, errInvalidClientMetadata, errInvalidRedirectURI} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("unclassified error %v", err)
		}
		if d.ApplicationType != appTypeWeb && d.ApplicationType != appTypeNative {
			t.Fatalf("application_type %q", d.ApplicationType)
		}
		for _, u := range d.RedirectURIs {
			if checkRedirectURI(u, d.ApplicationType, true) != nil {
				t.Fatalf("accepted redirect uri %q", u)
			}
		}
		checkStoredForm(t, d, data)
		b, err := marshalNoEscape(d)
		if err != nil {
			t.Fatal(err)
		}
		d2, err := parseDCRRequest(b, pol)
		if err != nil || !reflect.DeepEqual(d, d2) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, d, d2)
		}
	})
}

func FuzzClientIDURL(f *testing.F) {
	for _, s := range []string{specURL, "https://example.com/%2e%2e/x", "https://u@h/x", "https://h:443/a?b", "https://[::1]/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !isClientIDURL(s) {
			return
		}
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" ||
			u.RawQuery != "" || u.Path == "" || u.Path == "/" {
			t.Fatalf("accepted %q", s)
		}
		for _, seg := range strings.Split(u.Path, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("accepted dot segment in %q", s)
			}
		}
	})
}

func FuzzRedirectURIAllowed(f *testing.F) {
	f.Add("http://127.0.0.1:3000/cb", "http://127.0.0.1:4000/cb")
	f.Add("http://[::1]/cb?x", "http://[::1]:1/cb?x")
	f.Add("http://localhost:3000/cb", "http://localhost:4000/cb")
	f.Fuzz(func(t *testing.T, registered, requested string) {
		if !redirectURIAllowed([]string{registered}, requested) || registered == requested {
			return
		}
		// A non-exact match is only ever a loopback IP literal port change.
		u1, err1 := url.Parse(registered)
		u2, err2 := url.Parse(requested)
		if err1 != nil || err2 != nil || u1.Scheme != "http" || u2.Scheme != "http" ||
			u1.Hostname() != u2.Hostname() || (u1.Hostname() != "127.0.0.1" && u1.Hostname() != "::1") ||
			u1.User != nil || u2.User != nil || u1.RawPath != u2.RawPath || u1.Path != u2.Path ||
			u1.RawQuery != u2.RawQuery || u1.Fragment != u2.Fragment {
			t.Fatalf("%q allowed for registered %q", requested, registered)
		}
	})
}
