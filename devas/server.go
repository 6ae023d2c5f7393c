package devas

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/internal/devtoken"
	"github.com/mcpguard/mcpguard/validate/dpop"
)

// Server is the development authorization server. It is an http.Handler
// and safe for concurrent use. All state (codes, refresh token families,
// spent consent forms) is in memory and bounded, and is lost with the
// process. A pending consent request is not server state: the page's form
// carries it, sealed with a per-process key.
type Server struct {
	cfg      Config
	log      *slog.Logger
	registry *cimd.Registry
	dcr      http.Handler     // nil when dynamic registration is off
	tokens   *devtoken.Signer // access tokens (internal/devtoken)
	methods  []string         // token_endpoint_auth_methods_supported

	metaJSON []byte
	jwksJSON []byte
	routes   map[string]http.HandlerFunc
	authzURL string // path of the authorization endpoint, for the consent form and cookie

	codes   *store[codeRecord]
	refresh *refreshStore
	spent   *store[struct{}] // consent forms used, by hashKey(nonce)
	// spentAssertions are the ID-JAGs redeemed, by hashKey(iss, jti),
	// until they expire (jwtbearer.go).
	spentAssertions *store[struct{}]
	consentKey      []byte         // HMAC key sealing consent forms
	dpop            *dpop.Verifier // token-request proofs (dpop.go)
}

// New returns a Server for cfg (copied; see [Config] for the defaults).
// It fails with an error wrapping [ErrConfig] when the issuer or
// resources are missing or invalid, the key does not suit the algorithm,
// or a cimd constructor refuses its configuration.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:             cfg,
		log:             cfg.Logger,
		codes:           newStore[codeRecord](maxCodes),
		refresh:         newRefreshStore(maxRefreshFamilies, maxRevokedFamilies),
		spent:           newStore[struct{}](maxSpentConsents),
		spentAssertions: newStore[struct{}](maxSpentAssertions),
		consentKey:      make([]byte, 32),
	}
	_, _ = rand.Read(s.consentKey) // never fails (crypto/rand, Go 1.24+)
	var err error
	if s.tokens, err = devtoken.New(devtoken.Config{
		Issuer: cfg.Issuer, Resources: cfg.Resources, Algorithm: cfg.SigningAlgorithm, Key: cfg.Key,
		KeyID: cfg.KeyID, TTL: cfg.TokenTTL, Now: cfg.Now, Logger: cfg.Logger,
	}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	tc := s.tokens.Config() // the signer's defaults
	s.cfg.SigningAlgorithm, s.cfg.Key, s.cfg.KeyID, s.cfg.TokenTTL = tc.Algorithm, tc.Key, tc.KeyID, tc.TTL
	if s.dpop, err = newDPoPVerifier(cfg); err != nil {
		return nil, err
	}
	if err := s.buildRegistry(); err != nil {
		return nil, err
	}
	s.methods = []string{"none"}
	secrets := cfg.EnableDCR || cfg.Registry != nil
	for i := range cfg.Clients {
		secrets = secrets || (len(cfg.Clients[i].SecretSHA256) > 0)
	}
	if secrets {
		s.methods = append(s.methods, "client_secret_basic", "client_secret_post")
	}
	if s.metaJSON, err = json.Marshal(s.metadata()); err != nil {
		return nil, fmt.Errorf("%w: metadata: %w", ErrConfig, err)
	}
	if s.jwksJSON, err = json.Marshal(jose.JSONWebKeySet{Keys: s.PublicKeys()}); err != nil {
		return nil, fmt.Errorf("%w: jwks: %w", ErrConfig, err)
	}
	if err := s.buildRoutes(); err != nil {
		return nil, err
	}
	return s, nil
}

// buildRegistry sets s.registry and s.dcr.
func (s *Server) buildRegistry() error {
	cfg := s.cfg
	store := cfg.DCRStore
	var secretLifetime time.Duration
	if store == nil && cfg.EnableDCR {
		store = newRegStore(cfg.MaxRegistrations, cfg.RegistrationTTL, cfg.Now)
		secretLifetime = cfg.RegistrationTTL
	}
	s.registry = cfg.Registry
	if s.registry == nil {
		rc := cimd.RegistryConfig{Store: store, Static: cfg.Clients, Now: cfg.Now}
		if !cfg.DisableCIMD {
			res, err := cimd.NewResolver(cfg.CIMD)
			if err != nil {
				return fmt.Errorf("%w: %w", ErrConfig, err)
			}
			rc.Resolver = res
		}
		reg, err := cimd.NewRegistry(rc)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		s.registry = reg
	}
	if cfg.EnableDCR {
		h, err := cimd.NewDCRHandler(cimd.DCRConfig{
			Store:       store,
			AuthMethods: []string{"none", "client_secret_basic", "client_secret_post"},
			// MCP clients before 2026-07-28 register loopback redirects
			// without application_type.
			DefaultApplicationType: "native",
			// Generous limits: tests register many clients from loopback.
			IPRate:         100,
			IPBurst:        1000,
			NetworkClients: 1 << 16,
			// A secret lives as long as its registration.
			SecretLifetime: secretLifetime,
			Now:            cfg.Now,
			Logger:         cfg.Logger,
		})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		s.dcr = h
	}
	return nil
}

// buildRoutes maps the exact request paths to handlers. The paths come
// from the issuer: metadata at every well-known URL clients try (RFC 8414
// §3.1 path insertion, OpenID Connect Discovery 1.0 §4), endpoints under
// the issuer's path.
func (s *Server) buildRoutes() error {
	wk, err := asmeta.WellKnownURLs(s.cfg.Issuer)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s.routes = make(map[string]http.HandlerFunc)
	for _, w := range wk {
		u, err := url.Parse(w)
		if err != nil {
			return fmt.Errorf("%w: well-known url: %w", ErrConfig, err)
		}
		s.routes[u.Path] = withCORS("GET, HEAD", corsReadHeaders, s.serveMetadata)
	}
	base := s.issuerPath()
	s.authzURL = base + "/authorize"
	s.routes[s.authzURL] = s.handleAuthorize
	s.routes[base+"/token"] = withCORS("POST", corsAPIHeaders, s.handleToken)
	s.routes[base+"/jwks"] = withCORS("GET, HEAD", corsReadHeaders, s.serveJWKS)
	if s.dcr != nil {
		s.routes[base+"/register"] = withCORS("POST", corsAPIHeaders, s.dcr.ServeHTTP)
	}
	return nil
}

func (s *Server) issuerPath() string {
	u, _ := url.Parse(s.cfg.Issuer) // checked in New
	return u.Path
}

// ServeHTTP routes by exact URL path (mount the Server at the root of the
// issuer's origin, or route these paths to it unchanged):
//
//   - /.well-known/oauth-authorization-server[/issuer-path] and the OpenID
//     Connect Discovery locations: the server's RFC 8414 metadata
//     (the same document at each; no ID tokens are issued);
//   - issuer-path/authorize: the authorization endpoint (GET; POST from
//     the consent page);
//   - issuer-path/token: the token endpoint (POST);
//   - issuer-path/jwks: the public signing key (RFC 7517 JWK Set);
//   - issuer-path/register: RFC 7591 registration, with EnableDCR.
//
// Every endpoint but the authorization endpoint answers cross-origin
// requests (Access-Control-Allow-Origin: *, no credentials) and CORS
// preflights (OPTIONS with Access-Control-Request-Method: 204), so that
// browser-based clients such as MCP Inspector's web UI can discover,
// register and exchange codes. Anything else is 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, ok := s.routes[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h(w, r)
}

// metadata returns the server's RFC 8414 metadata, built with
// [cimd.ServerMetadata]: code_challenge_methods_supported ["S256"],
// authorization_response_iss_parameter_supported (RFC 9207; every
// authorization response carries iss), response_types_supported
// ["code"], client_id_metadata_document_supported unless DisableCIMD,
// registration_endpoint with EnableDCR, scopes_supported (Config.Scopes,
// plus offline_access with RefreshTokens), grant types authorization_code
// (plus refresh_token with RefreshTokens), and the client authentication
// methods the token endpoint implements: "none", plus client_secret_basic
// and client_secret_post when a client can have a secret (EnableDCR, a
// Registry, or a pre-registered client given one). private_key_jwt is not
// implemented. dpop_signing_alg_values_supported (RFC 9449 §5.1) lists
// the proof algorithms of the token endpoint, which binds a token to the
// key of any valid DPoP proof sent with its request.
func (s *Server) metadata() asmeta.Metadata {
	iss := s.cfg.Issuer
	grants := []string{"authorization_code"}
	if s.cfg.RefreshTokens {
		grants = append(grants, "refresh_token")
	}
	if s.jwtBearerEnabled() {
		grants = append(grants, grantTypeJWTBearer)
	}
	mc := cimd.ServerMetadataConfig{
		Issuer:                   iss,
		AuthorizationEndpoint:    iss + "/authorize",
		TokenEndpoint:            iss + "/token",
		JWKSURI:                  iss + "/jwks",
		CIMD:                     !s.cfg.DisableCIMD,
		ScopesSupported:          slices.Clone(s.cfg.Scopes),
		GrantTypes:               grants,
		TokenEndpointAuthMethods: slices.Clone(s.methods),
	}
	if s.cfg.EnableDCR {
		mc.RegistrationEndpoint = iss + "/register"
	}
	m := cimd.ServerMetadata(mc)
	m.ResponseModesSupported = []string{"query"}
	m.DPoPSigningAlgValuesSupported = s.dpop.Algorithms()
	return m
}

// PublicKeys returns the public signing key, as served at /jwks.
func (s *Server) PublicKeys() []jose.JSONWebKey {
	return []jose.JSONWebKey{s.tokens.PublicKey()}
}

func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	s.serveStatic(w, r, s.metaJSON, "application/json")
}

func (s *Server) serveJWKS(w http.ResponseWriter, r *http.Request) {
	s.serveStatic(w, r, s.jwksJSON, "application/json")
}

// serveStatic answers GET and HEAD with body (withCORS, in the routes,
// makes it readable cross-origin).
func (s *Server) serveStatic(w http.ResponseWriter, r *http.Request, body []byte, contentType string) {
	h := w.Header()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	_, _ = w.Write(body)
}
