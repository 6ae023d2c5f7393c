package authtest

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// defaultAudience is the audience of tokens minted by an [Issuer] whose
// [IssuerConfig.Audience] is empty.
const defaultAudience = "https://mcp.example.com/mcp"

// Well-known path prefixes served by [Issuer] (RFC 8414 §3, OpenID Connect
// Discovery 1.0 §4).
const (
	wellKnownOAuth = "/.well-known/oauth-authorization-server"
	wellKnownOIDC  = "/.well-known/openid-configuration"
)

// IssuerConfig configures [NewIssuer]. The zero value is a working issuer with
// no issuer path, plain HTTP, a pinned clock and "https://mcp.example.com/mcp".
type IssuerConfig struct {
	// Path is the path component of the issuer identifier, e.g. "/tenant1".
	// Empty means none, so the issuer is the bare server URL. It must start
	// with "/" when set; a trailing "/" is kept, because RFC 8414 §3.3
	// compares issuers byte for byte.
	Path string
	// TLS serves HTTPS with httptest's self-signed certificate. Use
	// [Issuer.Client] to talk to it. If false, plain HTTP on loopback.
	TLS bool
	// Now is the issuer's clock, used for iat/nbf/exp and for introspection.
	// If nil, a fixed clock reading 2026-01-02T03:04:05Z is used; the
	// wall clock is never read. See [Issuer.Now] and [Issuer.Advance].
	Now func() time.Time
	// Audience is the default "aud" of minted tokens. Defaults to
	// "https://mcp.example.com/mcp".
	Audience string
	// MixUpIssuer, if set, is reported as "issuer" in every metadata document
	// instead of [Issuer.URL]: the mix-up attack of RFC 8414 §3.3 (MCP
	// authorization, Authorization Server Metadata Discovery). Minted tokens
	// still carry the real issuer.
	MixUpIssuer string
	// DisableRFC8414 answers 404 at the RFC 8414 well-known URL, so a client
	// must fall back to OpenID Connect discovery.
	DisableRFC8414 bool
	// DisableOIDC answers 404 at both OpenID Connect discovery URLs.
	DisableOIDC bool
	// ExtraMetadata members are merged into every metadata document and
	// override the defaults (for example a hostile "jwks_uri"). If nil,
	// nothing is added. The map is copied.
	ExtraMetadata map[string]any
	// IntrospectionClientID and IntrospectionSecret are the HTTP Basic
	// credentials (RFC 7662 §2.1) the introspection endpoint requires.
	// Default to "rs-client" and "rs-secret".
	IntrospectionClientID string
	IntrospectionSecret   string
	// HugeBodyBytes is how many bytes the "huge" [Fault] writes at most.
	// Defaults to 100 MiB.
	HugeBodyBytes int64
	// RetryAfter is the Retry-After value sent with the
	// "too-many-requests" [Fault], rounded up to whole seconds. Defaults
	// to 1s.
	RetryAfter time.Duration
}

func (c IssuerConfig) withDefaults() IssuerConfig {
	if c.Now == nil {
		c.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	}
	if c.Audience == "" {
		c.Audience = defaultAudience
	}
	if c.IntrospectionClientID == "" {
		c.IntrospectionClientID = "rs-client"
	}
	if c.IntrospectionSecret == "" {
		c.IntrospectionSecret = "rs-secret"
	}
	if c.HugeBodyBytes <= 0 {
		c.HugeBodyBytes = 100 << 20
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = time.Second
	}
	c.ExtraMetadata = maps.Clone(c.ExtraMetadata)
	return c
}

// Issuer is an in-process OAuth 2.x authorization server for tests, on a
// loopback [httptest.Server]. Its exported fields describe it and are set by
// [NewIssuer]; changing them changes nothing. All methods are safe for
// concurrent use.
type Issuer struct {
	// URL is the issuer identifier: the server URL followed by
	// [IssuerConfig.Path]. It is exactly the "issuer" of the metadata
	// documents (unless [IssuerConfig.MixUpIssuer] is set) and the "iss" of
	// minted tokens.
	URL string
	// JWKSURL is the URL of the key set, the metadata "jwks_uri"
	// ("{issuer}/jwks").
	JWKSURL string
	// IntrospectionURL is the URL of the RFC 7662 introspection endpoint
	// ("{issuer}/introspect").
	IntrospectionURL string
	// MetadataURLs are the well-known metadata URLs in the order MCP
	// clients must try them (RFC 8414 first, then OpenID Connect path
	// insertion, then OpenID Connect path appending; MCP authorization,
	// Authorization Server Metadata Discovery). Without an issuer path the
	// last two coincide and there are only two.
	MetadataURLs []string
	// Audience is the default "aud" of minted tokens
	// ([IssuerConfig.Audience]).
	Audience string
	// IntrospectionClientID and IntrospectionSecret are the HTTP Basic
	// client credentials the introspection endpoint accepts.
	IntrospectionClientID, IntrospectionSecret string
	// Client is an HTTP client for the issuer. It trusts the test
	// certificate when [IssuerConfig.TLS] is set.
	Client *http.Client

	cfg    IssuerConfig
	srv    *httptest.Server
	origin string // scheme://host:port

	metaPaths                []string // in MCP probing order, deduplicated
	rfc8414, oidcA, oidcB    string
	jwksPath, introspectPath string
	authorizePath, tokenPath string

	closed    chan struct{}
	closeOnce sync.Once

	mu        sync.Mutex
	offset    time.Duration
	published []jose.JSONWebKey // the JWKS, in order
	private   []jose.JSONWebKey // every private key ever added, in order
	faults    map[string]Fault
	counts    map[string]int64
	issued    map[string]map[string]any
}

// NewIssuer starts an [Issuer] on a loopback httptest server and registers
// t.Cleanup to close it: the cleanup first releases requests held by the
// "hang" and "huge" faults, then shuts the server down and waits for its
// handlers. It calls t.Fatal if cfg is unusable.
func NewIssuer(t testing.TB, cfg IssuerConfig) *Issuer {
	t.Helper()
	cfg = cfg.withDefaults()
	if p := cfg.Path; p != "" && (!strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#")) {
		t.Fatalf("authtest: IssuerConfig.Path %q must start with / and have no query or fragment", p)
	}
	i := &Issuer{
		cfg:    cfg,
		closed: make(chan struct{}),
		faults: map[string]Fault{},
		counts: map[string]int64{},
		issued: map[string]map[string]any{},
	}
	if err := i.initKeys(); err != nil {
		t.Fatalf("authtest: generating keys: %s", err.Error())
	}
	// Compute every path before serving, so handlers only read fields that
	// were written before the server goroutines started.
	i.srv = httptest.NewUnstartedServer(http.HandlerFunc(i.serveHTTP))
	scheme := "http://"
	if cfg.TLS {
		scheme = "https://"
	}
	p := cfg.Path
	base := strings.TrimSuffix(p, "/")
	i.origin = scheme + i.srv.Listener.Addr().String()
	i.URL = i.origin + p
	insert := p
	if insert == "/" {
		insert = ""
	}
	i.rfc8414 = wellKnownOAuth + insert
	i.oidcA = wellKnownOIDC + insert
	i.oidcB = base + wellKnownOIDC
	i.metaPaths = []string{i.rfc8414, i.oidcA}
	if i.oidcB != i.oidcA {
		i.metaPaths = append(i.metaPaths, i.oidcB)
	}
	i.jwksPath = base + "/jwks"
	i.introspectPath = base + "/introspect"
	i.authorizePath = base + "/authorize"
	i.tokenPath = base + "/token"
	i.JWKSURL = i.origin + i.jwksPath
	i.IntrospectionURL = i.origin + i.introspectPath
	for _, p := range i.metaPaths {
		i.MetadataURLs = append(i.MetadataURLs, i.origin+p)
	}
	i.Audience = cfg.Audience
	i.IntrospectionClientID, i.IntrospectionSecret = cfg.IntrospectionClientID, cfg.IntrospectionSecret
	if cfg.TLS {
		i.srv.StartTLS()
	} else {
		i.srv.Start()
	}
	i.Client = i.srv.Client()
	t.Cleanup(i.close)
	return i
}

// Now returns the issuer's current time: [IssuerConfig.Now] plus everything
// passed to [Issuer.Advance]. Use it as the clock of the code under test.
func (i *Issuer) Now() time.Time {
	i.mu.Lock()
	off := i.offset
	i.mu.Unlock()
	return i.cfg.Now().Add(off)
}

// Advance moves the issuer's clock forward by d (backwards if negative).
func (i *Issuer) Advance(d time.Duration) {
	i.mu.Lock()
	i.offset += d
	i.mu.Unlock()
}

// close unblocks requests held by the "hang" or "huge" faults, then shuts
// the server down and waits for its handlers to return.
func (i *Issuer) close() {
	i.closeOnce.Do(func() {
		close(i.closed)
		i.srv.Close()
	})
}

// serveHTTP counts the request, applies the path's fault if any, and
// otherwise routes it.
func (i *Issuer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	i.mu.Lock()
	i.counts[path]++
	f := i.faults[path]
	i.mu.Unlock()
	if f != "" {
		i.serveFault(w, r, f, path)
		return
	}
	i.route(w, r, path)
}

// route serves path without faults.
func (i *Issuer) route(w http.ResponseWriter, r *http.Request, path string) {
	switch path {
	case i.jwksPath:
		if getOrHead(w, r) {
			writeJSON(w, http.StatusOK, i.jwks())
		}
	case i.introspectPath:
		i.serveIntrospection(w, r, "")
	case i.rfc8414:
		i.serveMetadata(w, r, !i.cfg.DisableRFC8414)
	case i.oidcA, i.oidcB:
		i.serveMetadata(w, r, !i.cfg.DisableOIDC)
	default:
		http.NotFound(w, r)
	}
}

func (i *Issuer) serveMetadata(w http.ResponseWriter, r *http.Request, enabled bool) {
	if !enabled {
		http.NotFound(w, r)
		return
	}
	if getOrHead(w, r) {
		writeJSON(w, http.StatusOK, i.metadata())
	}
}

// metadata is the document served at every well-known URL. The authorize
// and token endpoints are advertised but not implemented (404).
func (i *Issuer) metadata() map[string]any {
	iss := i.URL
	if i.cfg.MixUpIssuer != "" {
		iss = i.cfg.MixUpIssuer
	}
	m := map[string]any{
		"issuer":                                        iss,
		"jwks_uri":                                      i.JWKSURL,
		"authorization_endpoint":                        i.origin + i.authorizePath,
		"token_endpoint":                                i.origin + i.tokenPath,
		"introspection_endpoint":                        i.IntrospectionURL,
		"response_types_supported":                      []string{"code"},
		"code_challenge_methods_supported":              []string{"S256"},
		"grant_types_supported":                         []string{"authorization_code", "refresh_token"},
		"token_endpoint_auth_methods_supported":         []string{"none", "client_secret_basic"},
		"introspection_endpoint_auth_methods_supported": []string{"client_secret_basic"},
		"scopes_supported":                              []string{"mcp:tools"},
		"subject_types_supported":                       []string{"public"},
		"id_token_signing_alg_values_supported":         []string{"ES256", "RS256", "EdDSA"},
	}
	maps.Copy(m, i.cfg.ExtraMetadata)
	return m
}

// Requests returns how many requests reached the given endpoints, summed;
// each is a URL path ("/jwks") or a full URL of this issuer, e.g.
// iss.Requests(iss.JWKSURL) or iss.Requests(iss.MetadataURLs...). With no
// endpoint it counts every request. Every request is counted, whatever its
// outcome, faulted and refused ones included.
func (i *Issuer) Requests(endpoints ...string) int64 {
	i.mu.Lock()
	defer i.mu.Unlock()
	var n int64
	if len(endpoints) == 0 {
		for _, c := range i.counts {
			n += c
		}
		return n
	}
	for _, e := range endpoints {
		n += i.counts[toPath(e)]
	}
	return n
}

// toPath accepts a path or an absolute URL and returns the path.
func toPath(s string) string {
	if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
		if u, err := url.Parse(s); err == nil {
			return u.Path
		}
	}
	return s
}

func getOrHead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "authtest: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
