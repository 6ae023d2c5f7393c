package cimd_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"

	"github.com/mcpguard/mcpguard/cimd"
)

// An authorization server's /authorize endpoint: look the client up (a URL
// client_id is fetched as a Client ID Metadata Document), check the
// redirect URI against the registered ones, and only then redirect. A
// failed lookup is shown to the user, never redirected (RFC 6749
// §4.1.2.1), with the fixed external error.
func Example_authorizationServer() {
	// The MCP client publishes its metadata document over HTTPS.
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		fmt.Fprintf(w, `{"client_id":"https://%s%s","client_name":"Example MCP Client",
			"redirect_uris":["http://127.0.0.1:3000/callback"],"token_endpoint_auth_method":"none"}`, r.Host, r.URL.Path)
	}))
	defer docs.Close()
	roots := x509.NewCertPool()
	roots.AddCert(docs.Certificate())

	resolver, err := cimd.NewResolver(cimd.ResolverConfig{
		InsecureAllowLoopback: true,  // only because the test server is on 127.0.0.1
		RootCAs:               roots, // only because it has a test certificate
	})
	if err != nil {
		panic(err)
	}
	registry, err := cimd.NewRegistry(cimd.RegistryConfig{Resolver: resolver})
	if err != nil {
		panic(err)
	}

	authorize := func(w http.ResponseWriter, r *http.Request) {
		client, err := registry.Lookup(r.Context(), r.FormValue("client_id"))
		if err != nil {
			// Log err; show the user only the fixed answer, and never
			// redirect (RFC 6749 §4.1.2.1).
			http.Error(w, "invalid_client", http.StatusBadRequest)
			return
		}
		redirect := r.FormValue("redirect_uri")
		if !client.RedirectURIAllowed(redirect) {
			http.Error(w, "invalid_request", http.StatusBadRequest)
			return
		}
		// … authenticate the user, show client.ClientName and the client_id
		// host on the consent screen, check PKCE, then:
		http.Redirect(w, r, redirect+"?code=abc&state="+url.QueryEscape(r.FormValue("state")), http.StatusFound)
	}
	as := httptest.NewServer(http.HandlerFunc(authorize))
	defer as.Close()

	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	try := func(clientID, redirectURI string) {
		q := url.Values{"client_id": {clientID}, "redirect_uri": {redirectURI}, "state": {"xyz"}}
		resp, err := browser.Get(as.URL + "/authorize?" + q.Encode())
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if loc := resp.Header.Get("Location"); loc != "" {
			fmt.Println(resp.StatusCode, loc)
			return
		}
		fmt.Println(resp.StatusCode, strings.TrimSpace(string(body)))
	}
	clientID := docs.URL + "/client.json"
	try(clientID, "http://127.0.0.1:51234/callback")    // loopback: any port (RFC 8252 §7.3)
	try(clientID, "https://evil.example/callback")      // not registered
	try(docs.URL+"/../admin", "http://127.0.0.1/cb")    // not a valid client_id URL
	try("https://169.254.169.254/latest/meta-data", "") // refused by the SSRF guard
	// Output:
	// 302 http://127.0.0.1:51234/callback?code=abc&state=xyz
	// 400 invalid_request
	// 400 invalid_client
	// 400 invalid_client
}

func ExampleClient_RedirectURIAllowed() {
	c := &cimd.Client{Document: cimd.Document{
		RedirectURIs: []string{"http://127.0.0.1:3000/callback", "http://localhost:3000/callback", "https://app.example.com/cb"},
	}}
	for _, u := range []string{
		"http://127.0.0.1:3000/callback",
		"http://127.0.0.1:49152/callback", // loopback IP literal: any port
		"http://localhost:49152/callback", // localhost: exact only
		"https://app.example.com/cb/",     // trailing slash: not exact
	} {
		fmt.Println(c.RedirectURIAllowed(u), u)
	}
	// Output:
	// true http://127.0.0.1:3000/callback
	// true http://127.0.0.1:49152/callback
	// false http://localhost:49152/callback
	// false https://app.example.com/cb/
}

// A client_id that cannot name a Client ID Metadata Document is refused
// before any I/O, with the reason "not_client_id_url".
func ExampleError() {
	res, err := cimd.NewResolver(cimd.ResolverConfig{})
	if err != nil {
		panic(err)
	}
	for _, s := range []string{
		"https://app.example.com/",
		"http://app.example.com/client.json",
		"https://app.example.com/a/%2e%2e/client.json",
		"https://app.example.com/client.json?v=2",
		"dcr_3q2-7wV0",
	} {
		_, err := res.Resolve(context.Background(), s)
		var e *cimd.Error
		if errors.As(err, &e) {
			fmt.Println(e.Reason, s)
		}
	}
	reg, _ := cimd.NewRegistry(cimd.RegistryConfig{})
	_, err = reg.Lookup(context.Background(), "unknown")
	fmt.Println(errors.Is(err, cimd.ErrUnknownClient))
	// Output:
	// not_client_id_url https://app.example.com/
	// not_client_id_url http://app.example.com/client.json
	// not_client_id_url https://app.example.com/a/%2e%2e/client.json
	// not_client_id_url https://app.example.com/client.json?v=2
	// not_client_id_url dcr_3q2-7wV0
	// true
}

func ExampleServerMetadata() {
	m := cimd.ServerMetadata(cimd.ServerMetadataConfig{
		Issuer:                "https://as.example.com",
		AuthorizationEndpoint: "https://as.example.com/authorize",
		TokenEndpoint:         "https://as.example.com/token",
		CIMD:                  true,
	})
	b, _ := json.MarshalIndent(m, "", " ")
	fmt.Println(string(b))
	// Output:
	// {
	//  "issuer": "https://as.example.com",
	//  "authorization_endpoint": "https://as.example.com/authorize",
	//  "token_endpoint": "https://as.example.com/token",
	//  "response_types_supported": [
	//   "code"
	//  ],
	//  "grant_types_supported": [
	//   "authorization_code",
	//   "refresh_token"
	//  ],
	//  "token_endpoint_auth_methods_supported": [
	//   "none"
	//  ],
	//  "code_challenge_methods_supported": [
	//   "S256"
	//  ],
	//  "authorization_response_iss_parameter_supported": true,
	//  "client_id_metadata_document_supported": true
	// }
}

// Legacy dynamic registration (RFC 7591) for pre-2026 MCP clients, with
// the registered client then found through the same Registry.
func ExampleNewDCRHandler() {
	store := &mapStore{m: map[string][]byte{}} // in production: cimd/boltstore, or redisstore for replicas
	dcr, err := cimd.NewDCRHandler(cimd.DCRConfig{Store: store})
	if err != nil {
		panic(err)
	}
	registry, _ := cimd.NewRegistry(cimd.RegistryConfig{Store: store})
	as := httptest.NewServer(dcr)
	defer as.Close()

	resp, err := http.Post(as.URL, "application/json", strings.NewReader(
		`{"client_name":"CLI","application_type":"native","redirect_uris":["http://127.0.0.1/callback"],"token_endpoint_auth_method":"none"}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var reg struct {
		ClientID string `json:"client_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&reg)
	fmt.Println(resp.StatusCode, resp.Header.Get("Deprecation"), strings.HasPrefix(reg.ClientID, "dcr_"))

	c, err := registry.Lookup(context.Background(), reg.ClientID)
	fmt.Println(err, c.Source, c.RedirectURIAllowed("http://127.0.0.1:8080/callback"))
	// Output:
	// 201 @1785196800 true
	// <nil> dcr true
}

// mapStore is a [cimd.Store] in a map, for the example.
type mapStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *mapStore) Put(_ context.Context, c *cimd.Client) error {
	b, err := json.Marshal(c) // the secret hash included
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[c.ClientID] = b
	return nil
}

func (s *mapStore) Get(_ context.Context, id string) (*cimd.Client, error) {
	s.mu.Lock()
	b, ok := s.m[id]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: not in store", cimd.ErrUnknownClient)
	}
	c := new(cimd.Client)
	return c, json.Unmarshal(b, c)
}
