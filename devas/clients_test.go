package devas_test

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
)

// cimdHost serves client metadata documents over TLS on 127.0.0.1.
type cimdHost struct {
	ts    *httptest.Server
	docs  map[string]map[string]any // path -> document
	fetch atomic.Int32
}

func newCIMDHost(t *testing.T) *cimdHost {
	h := &cimdHost{docs: map[string]map[string]any{}}
	h.ts = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.fetch.Add(1)
		d, ok := h.docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(d)
	}))
	t.Cleanup(h.ts.Close)
	return h
}

func (h *cimdHost) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(h.ts.Certificate())
	return p
}

// add publishes a valid document at path and returns its client_id.
func (h *cimdHost) add(path string, mod func(map[string]any)) string {
	id := h.ts.URL + path
	d := map[string]any{
		"client_id":                  id,
		"client_name":                "CIMD <b>Client</b>",
		"redirect_uris":              []string{redirectURI},
		"token_endpoint_auth_method": "none",
	}
	if mod != nil {
		mod(d)
	}
	h.docs[path] = d
	return id
}

// cimdEnv starts a server that resolves documents from h.
func cimdEnv(t *testing.T, h *cimdHost, mod func(*devas.Config)) *env {
	return start(t, func(c *devas.Config) {
		c.CIMD = cimd.ResolverConfig{InsecureAllowLoopback: true, RootCAs: h.pool()}
		if mod != nil {
			mod(c)
		}
	})
}

// TestCIMDFlow: a client_id URL is resolved, its redirect URIs enforced,
// and its client_id carried into the token.
func TestCIMDFlow(t *testing.T) {
	h := newCIMDHost(t)
	id := h.add("/client.json", nil)
	e := cimdEnv(t, h, nil)

	q := authParams()
	q.Set("client_id", id)
	f := codeForm(e.code(q))
	f.Set("client_id", id)
	tr := e.token(f, nil)
	if tr.Status != http.StatusOK {
		t.Fatalf("token: %d %q", tr.Status, tr.Error)
	}
	if c, _ := e.decode(tr.AccessToken); c.ClientID != id {
		t.Errorf("client_id claim = %q, want %q", c.ClientID, id)
	}
	if n := h.fetch.Load(); n != 1 {
		t.Errorf("document fetched %d times, want 1 (cached)", n)
	}
}

// TestCIMDConsentShowsHost: the consent page names the client_id host and
// escapes the fetched client_name.
func TestCIMDConsentShowsHost(t *testing.T) {
	h := newCIMDHost(t)
	id := h.add("/client.json", nil)
	e := cimdEnv(t, h, func(c *devas.Config) { c.AutoApprove = false })
	q := authParams()
	q.Set("client_id", id)
	resp, body := e.authorize(q)
	u, _ := url.Parse(id)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "hosted at <strong>"+u.Host+"</strong>") ||
		strings.Contains(body, "<b>Client") || !strings.Contains(body, "&lt;b&gt;Client") {
		t.Errorf("consent page (status %d) lacks escaped name or client host:\n%s", resp.StatusCode, body)
	}
}

// TestCIMDFailures: documents that cannot be used give an error page,
// never a redirect.
func TestCIMDFailures(t *testing.T) {
	h := newCIMDHost(t)
	mismatch := h.add("/mismatch.json", func(d map[string]any) { d["client_id"] = "https://elsewhere.example/client.json" })
	secret := h.add("/secret.json", func(d map[string]any) { d["token_endpoint_auth_method"] = "client_secret_basic" })
	good := h.add("/good.json", nil)
	e := cimdEnv(t, h, nil)
	tests := []struct {
		name, clientID, redirect string
	}{
		{name: "client_id mismatch", clientID: mismatch, redirect: redirectURI},
		{name: "shared secret method", clientID: secret, redirect: redirectURI},
		{name: "not found", clientID: h.ts.URL + "/missing.json", redirect: redirectURI},
		{name: "unregistered redirect", clientID: good, redirect: "http://127.0.0.1/elsewhere"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := authParams()
			q.Set("client_id", tt.clientID)
			q.Set("redirect_uri", tt.redirect)
			resp, _ := e.authorize(q)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
				t.Errorf("status %d Location %q, want 400 page", resp.StatusCode, resp.Header.Get("Location"))
			}
		})
	}
	t.Run("cimd disabled", func(t *testing.T) {
		e := cimdEnv(t, h, func(c *devas.Config) { c.DisableCIMD = true })
		q := authParams()
		q.Set("client_id", good)
		if resp, _ := e.authorize(q); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status = %d, want 400", resp.StatusCode)
		}
		if e.as.Metadata().ClientIDMetadataDocumentSupported {
			t.Errorf("metadata advertises CIMD while disabled")
		}
	})
}

// register posts an RFC 7591 registration and returns the response body.
func (e *env) register(body map[string]any) (int, http.Header, map[string]any) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := e.hc.Post(e.issuer+"/register", "application/json", bytes.NewReader(b))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header, out
}

// TestDCRFlow: register confidential and public clients, then run the
// flow with each client authentication method.
func TestDCRFlow(t *testing.T) {
	e := start(t, func(c *devas.Config) { c.EnableDCR = true })
	if got := e.as.Metadata().RegistrationEndpoint; got != e.issuer+"/register" {
		t.Fatalf("registration_endpoint = %q", got)
	}
	const cb = "http://127.0.0.1:5555/cb"
	register := func(method string) (id, secret string) {
		status, h, out := e.register(map[string]any{
			"redirect_uris": []string{cb}, "client_name": "DCR client",
			"token_endpoint_auth_method": method, "application_type": "native",
		})
		if status != http.StatusCreated || h.Get("Deprecation") == "" {
			t.Fatalf("register %s: status %d, Deprecation %q, body %v", method, status, h.Get("Deprecation"), out)
		}
		id, _ = out["client_id"].(string)
		secret, _ = out["client_secret"].(string)
		return id, secret
	}
	run := func(id string, auth func(*http.Request), mod func(url.Values)) tokenReply {
		q := authParams()
		q.Set("client_id", id)
		q.Set("redirect_uri", cb)
		f := codeForm(e.code(q))
		f.Set("client_id", id)
		f.Set("redirect_uri", cb)
		if auth != nil {
			f.Del("client_id")
		}
		if mod != nil {
			mod(f)
		}
		return e.token(f, auth)
	}

	basicID, basicSecret := register("client_secret_basic")
	basic := func(id, secret string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret)) }
	}
	if tr := run(basicID, basic(basicID, basicSecret), nil); tr.Status != http.StatusOK {
		t.Errorf("client_secret_basic: %d %q", tr.Status, tr.Error)
	}
	if tr := run(basicID, basic(basicID, "wrong"), nil); tr.Status != http.StatusUnauthorized || tr.Error != "invalid_client" ||
		tr.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("wrong secret: %d %q", tr.Status, tr.Error)
	}
	if tr := run(basicID, nil, nil); tr.Status != http.StatusUnauthorized {
		t.Errorf("no secret: %d %q", tr.Status, tr.Error)
	}

	postID, postSecret := register("client_secret_post")
	if tr := run(postID, nil, func(f url.Values) { f.Set("client_secret", postSecret) }); tr.Status != http.StatusOK {
		t.Errorf("client_secret_post: %d %q", tr.Status, tr.Error)
	}
	if tr := run(postID, basic(postID, postSecret), func(f url.Values) { f.Set("client_secret", postSecret) }); tr.Status != http.StatusUnauthorized {
		t.Errorf("two methods at once: %d %q, want 401", tr.Status, tr.Error)
	}

	publicID, _ := register("none")
	if tr := run(publicID, nil, nil); tr.Status != http.StatusOK {
		t.Errorf("public DCR client: %d %q", tr.Status, tr.Error)
	}

	status, _, _ := e.register(map[string]any{"redirect_uris": []string{cb}, "token_endpoint_auth_method": "private_key_jwt", "jwks_uri": "https://x.example/jwks"})
	if status != http.StatusBadRequest {
		t.Errorf("private_key_jwt registration: %d, want 400 (not implemented by devas)", status)
	}
}

// TestDCROff: without EnableDCR there is no /register.
func TestDCROff(t *testing.T) {
	e := start(t, nil)
	if status, _, _ := e.register(map[string]any{"redirect_uris": []string{redirectURI}}); status != http.StatusNotFound {
		t.Errorf("status = %d, want 404", status)
	}
	if e.as.Metadata().RegistrationEndpoint != "" {
		t.Errorf("registration_endpoint advertised without EnableDCR")
	}
}
