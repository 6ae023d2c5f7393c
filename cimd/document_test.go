package cimd

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const specURL = "https://app.example.com/oauth/client-metadata.json"

func TestParseDocumentSpecExample(t *testing.T) {
	d, err := parseDocument([]byte(readTestdata(t, "spec-5.6.json")), specURL, cimdPolicy(false))
	if err != nil {
		t.Fatalf("spec-auth.md §5.6 example refused: %v", err)
	}
	if d.ClientID != specURL || d.ClientName != "Example MCP Client" || d.TokenEndpointAuthMethod != "none" ||
		!slices.Equal(d.RedirectURIs, []string{"http://127.0.0.1:3000/callback", "http://localhost:3000/callback"}) ||
		!slices.Equal(d.GrantTypes, []string{"authorization_code"}) || !slices.Equal(d.ResponseTypes, []string{"code"}) {
		t.Errorf("got %+v", d)
	}
	if _, err := parseDocument([]byte(readTestdata(t, "private-key-jwt.json")), specURL, cimdPolicy(false)); err != nil {
		t.Errorf("private_key_jwt document refused: %v", err)
	}
	// The flow diagram's URL is a different document (spec-auth.md §5.6).
	_, err = parseDocument([]byte(readTestdata(t, "spec-5.6.json")), "https://app.example.com/oauth/metadata.json", cimdPolicy(false))
	wantErrs(t, err, errClientIDMismatch)
}

func TestParseDocumentDefaults(t *testing.T) {
	d, err := parseDocument([]byte(`{"client_id":"`+specURL+`","client_name":"n","redirect_uris":["https://a.example/cb"]}`), specURL, cimdPolicy(false))
	wantErrs(t, err)
	if d.TokenEndpointAuthMethod != authMethodNone || !slices.Equal(d.GrantTypes, []string{"authorization_code"}) ||
		!slices.Equal(d.ResponseTypes, []string{"code"}) || d.ApplicationType != "" {
		t.Errorf("defaults: got %+v", d)
	}
}

// badDocs are invalid documents, each with the sentinels it must match.
// {{URL}} is the document's own URL. They run over real TLS in
// TestResolveInvalidDocuments and without network in TestParseDocument.
var badDocs = []struct {
	name string
	body string
	want []error
}{
	{"empty body", ``, []error{errInvalidDocument, errMalformed}},
	{"not json", `client_id=x`, []error{errInvalidDocument, errMalformed}},
	{"json null", `null`, []error{errInvalidDocument, errMalformed}},
	{"json array", `[{"client_id":"{{URL}}"}]`, []error{errInvalidDocument, errMalformed}},
	{"json string", `"{{URL}}"`, []error{errInvalidDocument, errMalformed}},
	{"truncated", `{"client_id":"{{URL}}","client_name":"x"`, []error{errInvalidDocument, errMalformed}},
	{"trailing garbage", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"]}x`, []error{errInvalidDocument, errMalformed}},
	{"two objects", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"]}{}`, []error{errInvalidDocument, errMalformed}},
	{"duplicate client_id", `{"client_id":"{{URL}}","client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errDuplicateMember}},
	{"duplicate redirect_uris", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"redirect_uris":["https://evil.example/cb"]}`, []error{errInvalidDocument, errDuplicateMember}},
	{"duplicate unknown member", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"x":1,"x":2}`, []error{errInvalidDocument, errDuplicateMember}},
	{"duplicate via escape", `{"client_id":"{{URL}}","client_name":"x","client_n\u0061me":"y","redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errDuplicateMember}},
	{"missing client_id", `{"client_name":"x","redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"client_id number", `{"client_id":1,"client_name":"x","redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"client_id array", `{"client_id":["{{URL}}"],"client_name":"x","redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"missing client_name", `{"client_id":"{{URL}}","redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"empty client_name", `{"client_id":"{{URL}}","client_name":"","redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"null client_name", `{"client_id":"{{URL}}","client_name":null,"redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"client_name number", `{"client_id":"{{URL}}","client_name":7,"redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"client_name object", `{"client_id":"{{URL}}","client_name":{"en":"x"},"redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"client_name too long", `{"client_id":"{{URL}}","client_name":"` + strings.Repeat("n", 257) + `","redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"client_name control", `{"client_id":"{{URL}}","client_name":"a\u0007b","redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"client_name newline", `{"client_id":"{{URL}}","client_name":"a\nb","redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"client_name bidi override", `{"client_id":"{{URL}}","client_name":"Good\u202eliveC","redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"client_name invalid utf-8", "{\"client_id\":\"{{URL}}\",\"client_name\":\"a\xffb\",\"redirect_uris\":[\"https://a.example/cb\"]}", []error{errInvalidDocument, errInvalidClientMetadata}},
	{"missing redirect_uris", `{"client_id":"{{URL}}","client_name":"x"}`, []error{errInvalidDocument, errInvalidRedirectURI}},
	{"empty redirect_uris", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":[]}`, []error{errInvalidDocument, errInvalidRedirectURI}},
	{"redirect_uris string", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":"https://a.example/cb"}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"redirect_uris numbers", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":[1]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"redirect_uris null entry", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":[null]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"too many redirect_uris", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":[` + strings.TrimSuffix(strings.Repeat(`"https://a.example/cb",`, 21), ",") + `]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"redirect javascript", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["javascript:alert(1)"]}`, []error{errInvalidDocument, errInvalidRedirectURI}},
	{"redirect data", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["data:text/html,x"]}`, []error{errInvalidDocument, errInvalidRedirectURI}},
	{"redirect file", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["file:///etc/passwd"]}`, []error{errInvalidDocument, errInvalidRedirectURI}},
	{"redirect http remote", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["http://evil.example/cb"]}`, []error{errInvalidDocument, errInvalidRedirectURI}},
	{"redirect fragment", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb#f"]}`, []error{errInvalidDocument, errInvalidRedirectURI}},
	{"redirect wildcard", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://*.example/cb"]}`, []error{errInvalidDocument, errInvalidRedirectURI}},
	{"redirect custom scheme", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["com.example.app:/cb"]}`, []error{errInvalidDocument, errInvalidRedirectURI}},
	{"redirect relative", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["/cb"]}`, []error{errInvalidDocument, errInvalidRedirectURI}},
	{"redirect web loopback", `{"client_id":"{{URL}}","client_name":"x","application_type":"web","redirect_uris":["http://127.0.0.1/cb"]}`, []error{errInvalidDocument, errInvalidRedirectURI}},
	{"unknown application_type", `{"client_id":"{{URL}}","client_name":"x","application_type":"desktop","redirect_uris":["https://a.example/cb"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"client_secret", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"client_secret":"s"}`, []error{errInvalidDocument, errSharedSecret}},
	{"client_secret null", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"client_secret":null}`, []error{errInvalidDocument, errSharedSecret}},
	{"client_secret_expires_at", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"client_secret_expires_at":0}`, []error{errInvalidDocument, errSharedSecret}},
	{"client_secret_basic", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, []error{errInvalidDocument, errSharedSecret}},
	{"client_secret_post", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_post"}`, []error{errInvalidDocument, errSharedSecret}},
	{"client_secret_jwt", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_jwt"}`, []error{errInvalidDocument, errSharedSecret}},
	{"unknown auth method", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"tls_client_auth"}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"auth method number", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":0}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"private_key_jwt without keys", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"jwks and jwks_uri", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks_uri":"https://a.example/jwks","jwks":{"keys":[{"kty":"EC"}]}}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"jwks not object", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":"{}"}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"jwks empty keys", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":{"keys":[]}}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"jwks key not object", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":{"keys":[1]}}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	// Repeated names are refused at every depth by internal/strictjson,
	// so a repeat inside "jwks" fails as the document's own would.
	{"jwks key duplicate member", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":{"keys":[{"kty":"EC","x":"a","x":"b"}]}}`, []error{errInvalidDocument, errDuplicateMember}},
	{"jwks duplicate keys member", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":{"keys":[{"kty":"EC"}],"keys":[{"kty":"RSA"}]}}`, []error{errInvalidDocument, errDuplicateMember}},
	{"jwks key case-variant members", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":{"keys":[{"kty":"EC","x":"a","X":"b"}]}}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	// Case variants of the members read are refused, not ignored as unknown.
	{"Client_ID beside client_id", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"Client_ID":"https://evil.example/x"}`, []error{errInvalidDocument, errDuplicateMember}},
	{"redirect_URIs alone", `{"client_id":"{{URL}}","client_name":"x","redirect_URIs":["https://evil.example/cb"]}`, []error{errInvalidDocument, errDuplicateMember}},
	{"invalid utf-8 in an unknown member", "{\"client_id\":\"{{URL}}\",\"client_name\":\"x\",\"redirect_uris\":[\"https://a.example/cb\"],\"x\":\"\xff\"}", []error{errInvalidDocument, errInvalidClientMetadata}},
	{"jwks_uri http", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks_uri":"http://a.example/jwks"}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"logo_uri javascript", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"logo_uri":"javascript:alert(1)"}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"client_uri number", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"client_uri":5}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"implicit grant", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"grant_types":["implicit"],"response_types":["token"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"password grant", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"grant_types":["password"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"unknown grant", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"grant_types":["urn:x"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"public client_credentials", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"grant_types":["client_credentials"],"response_types":[]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"token response type", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"response_types":["code","token"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"code without grant", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"grant_types":["refresh_token"],"response_types":["code"]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"grant without code", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"grant_types":["authorization_code"],"response_types":[]}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"grant_types string", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"grant_types":"authorization_code"}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"bad scope", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"scope":"a  b"}`, []error{errInvalidDocument, errInvalidClientMetadata}},
	{"too many members", `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"]` + manyMembers(70) + `}`, []error{errInvalidDocument, errInvalidClientMetadata}},
}

func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`,"m` + strconv.Itoa(i) + `":0`)
	}
	return b.String()
}

func TestParseDocument(t *testing.T) {
	for _, tt := range badDocs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseDocument([]byte(strings.ReplaceAll(tt.body, "{{URL}}", specURL)), specURL, cimdPolicy(false))
			wantErrs(t, err, tt.want...)
		})
	}
}

// TestResolveInvalidDocuments serves every bad document over real TLS.
func TestResolveInvalidDocuments(t *testing.T) {
	mux := http.NewServeMux()
	for i, tt := range badDocs {
		mux.Handle("/doc/"+strconv.Itoa(i), response{body: tt.body})
	}
	s := newTLSServer(t, mux)
	r := mustResolver(t, testResolverConfig(s, newClock()))
	for i, tt := range badDocs {
		t.Run(tt.name, func(t *testing.T) {
			d, err := r.Resolve(context.Background(), s.URL+"/doc/"+strconv.Itoa(i))
			wantErrs(t, err, tt.want...)
			if d != nil {
				t.Errorf("got document %+v with error", d)
			}
			var e *Error
			if !errors.As(err, &e) || e.Reason == "" {
				t.Errorf("error %v is not an *Error with a reason", err)
			}
		})
	}
}

func TestResolveAcceptsVariants(t *testing.T) {
	bodies := map[string]string{
		"/spec":       strings.Replace(readTestdata(t, "spec-5.6.json"), specURL, "{{URL}}", 1),
		"/pkjwt":      strings.Replace(readTestdata(t, "private-key-jwt.json"), specURL, "{{URL}}", 1),
		"/jwks_uri":   `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks_uri":"https://a.example/jwks.json"}`,
		"/unknown":    `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"client_name#fr":"y","extension":{"a":[1,2],"A":3}}`,
		"/nulls":      `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"logo_uri":null,"grant_types":null}`,
		"/native":     `{"client_id":"{{URL}}","client_name":"x","application_type":"native","redirect_uris":["http://[::1]/cb"]}`,
		"/cc":         `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks_uri":"https://a.example/jwks.json","grant_types":["authorization_code","client_credentials"]}`,
		"/json-type":  `{"client_id":"{{URL}}","client_name":"x","redirect_uris":["https://a.example/cb"]}`,
		"/wide-chars": `{"client_id":"{{URL}}","client_name":"クライアント 😀","redirect_uris":["https://a.example/cb"]}`,
	}
	mux := http.NewServeMux()
	for p, b := range bodies {
		ct := ""
		if p == "/json-type" {
			ct = "application/json; charset=utf-8"
		}
		mux.Handle(p, response{body: b, contentType: ct})
	}
	s := newTLSServer(t, mux)
	r := mustResolver(t, testResolverConfig(s, newClock()))
	for p := range bodies {
		t.Run(p, func(t *testing.T) {
			d, err := r.Resolve(context.Background(), s.URL+p)
			wantErrs(t, err)
			if d.ClientID != s.URL+p {
				t.Errorf("ClientID = %q, want %q", d.ClientID, s.URL+p)
			}
		})
	}
}
