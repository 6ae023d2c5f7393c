package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"time"

	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// ErrConfig reports an unusable [Config]. Only [New] returns it. When a
// package below refused its part of the configuration, the error also
// wraps that package's sentinel (validate.ErrConfig, jwks.ErrConfig,
// middleware.Error "config", prm.ErrInvalidMetadata, …).
var ErrConfig = errors.New("mcpguard: invalid config")

// Config configures a [Guard]. [New] copies it; later changes by the
// caller have no effect.
//
// The top-level fields are all most servers need. The advanced
// configurations (Validate, Middleware, JWKS, Metadata) give every other
// setting of the packages below, with these rules:
//
//   - The fields the Guard fills must be left zero, and New refuses a
//     conflict rather than choosing: Validate.Issuers (filled from Issuers
//     and Keys); Middleware.Validator, Middleware.Metadata,
//     Middleware.Scopes and Middleware.Operations (filled from the
//     validator, Metadata, Scopes and Operations); JWKS.Issuer and
//     JWKS.JWKSURL (set per issuer, discovery).
//   - Some fields have defaults that a set value replaces:
//     Validate.Audiences (default: Resource; when set it must contain
//     Resource), Metadata.Resource (Resource; when set it must equal it),
//     Metadata.AuthorizationServers (Issuers; when set, a subset of them),
//     Metadata.ScopesSupported (Scopes, every scope of Operations and of
//     the middleware's Protect and RequireScopes routes, de-duplicated,
//     never offline_access), and Middleware.Logger and
//     JWKS.Logger (Logger).
//   - Everything else is passed through unchanged, with the defaults of
//     its own package.
type Config struct {
	// Resource is the canonical resource identifier of the MCP server: the
	// URL of its MCP endpoint, such as "https://mcp.example.com/mcp" (RFC
	// 8707 §2, RFC 9728 §2 "resource"). Required: https, or http on a
	// loopback host. It is the audience tokens must carry, the source of
	// every URL in the challenges and the metadata (never the request's
	// Host), and its path is where [Guard.Mount] puts the MCP endpoint.
	Resource string

	// Issuers are the issuer identifiers of the trusted authorization
	// servers (RFC 8414 §2), compared byte for byte with a token's "iss".
	// Required, at least one. Each gets a [jwks.Source] that discovers its
	// jwks_uri from the issuer's metadata and keeps the keys fresh in the
	// background, unless Keys gives its key source. They are published as
	// the metadata's authorization_servers (RFC 9728 §2).
	Issuers []string

	// Keys optionally gives the key source of some issuers (a
	// validate.StaticKeys, a jwks.Source built with options of its own, a
	// jwkset storage through jwks.FromStorage, …), instead of the discovered
	// jwks.Source. Every key must be one of Issuers, and no value nil. The
	// caller owns these sources: [Guard.Close] does not close them.
	Keys map[string]validate.KeySource

	// Scopes are the base scopes every request needs (middleware
	// Config.Scopes), sent in the 401 challenge and published, with the
	// scopes of Operations, as scopes_supported. Nil means none.
	Scopes []string

	// Operations gives the scopes of MCP operations (JSON-RPC methods,
	// tools, prompts, resources) on top of Scopes. The zero value adds
	// none.
	Operations middleware.OperationPolicy

	// Validate holds advanced token-validation settings (leeway, allowed
	// clients, algorithms, tenant claim, cache, clock, …). Issuers must be
	// nil; Audiences defaults to {Resource}. Validate.Now, when set, is
	// also the clock of Middleware (step-up window, DPoP proofs, refusal
	// log rate) and of JWKS when their own Now is nil, so one pinned clock
	// pins the whole Guard.
	Validate validate.Config

	// TokenValidator, if set, is called once by [New] with the JWT
	// validator it built and returns the token validator the middleware
	// uses instead, such as an introspect.Hybrid that validates these JWTs
	// with it and introspects every other token (RFC 7662, opaque
	// tokens). It must return a non-nil validator or an error, which New
	// returns wrapped in [ErrConfig]. [Guard.Validator] still returns the
	// JWT validator. Nil means the JWT validator.
	TokenValidator func(jwt *validate.Validator) (middleware.TokenValidator, error)

	// Middleware holds advanced middleware settings (ScopeImplies, step-up
	// bounds, AllowedOrigins, OnDecision, DPoP, …). A DPoP policy other
	// than off also sets Validate.AllowConfirmation, so that DPoP-bound
	// tokens reach the middleware's binding check. Validator, Metadata, Scopes
	// and Operations must be zero; Logger defaults to Logger.
	Middleware middleware.Config

	// JWKS is the template of the key source created for each issuer not
	// in Keys (refresh intervals, HTTP client, clock, …). Issuer and JWKSURL
	// must be empty: each source gets its issuer and discovers the
	// jwks_uri. For a fixed JWKS URL, pass a jwks.Source in Keys.
	JWKS jwks.Config

	// Metadata holds extra protected-resource metadata members
	// (ResourceName, ResourceDocumentation, BearerMethodsSupported, …).
	// Resource, AuthorizationServers and ScopesSupported are filled as the
	// type comment says.
	Metadata prm.Metadata

	// Logger receives the middleware's refusals and the key sources'
	// refresh failures, unless Middleware.Logger or JWKS.Logger is set.
	// Nil discards.
	Logger *slog.Logger

	// WaitForKeys, if positive, makes [New] wait up to this long for
	// every issuer's first key set ([Guard.WaitReady]) and fail, with an
	// error wrapping [ErrNotReady] that names each issuer and the cause
	// (DNS, TLS, 404, issuer mix-up, …), if one is still missing: a
	// mistyped issuer then stops the deploy instead of serving 503s. Zero
	// means New returns at once and the keys arrive in the background.
	// Negative is a configuration error.
	WaitForKeys time.Duration
}

// check reports the first conflict or missing value of c.
func (c *Config) check() error {
	switch {
	case c.Resource == "":
		return fmt.Errorf("%w: Resource is required", ErrConfig)
	case len(c.Issuers) == 0:
		return fmt.Errorf("%w: Issuers is required", ErrConfig)
	case c.Validate.Issuers != nil:
		return fmt.Errorf("%w: Validate.Issuers must be nil; it is filled from Issuers and Keys", ErrConfig)
	case c.Validate.Audiences != nil && !slices.Contains(c.Validate.Audiences, c.Resource):
		return fmt.Errorf("%w: Validate.Audiences must contain Resource", ErrConfig)
	case c.Middleware.Validator != nil, !reflect.ValueOf(c.Middleware.Metadata).IsZero(),
		c.Middleware.Scopes != nil, !reflect.ValueOf(c.Middleware.Operations).IsZero():
		return fmt.Errorf("%w: Middleware.Validator, Metadata, Scopes and Operations must be zero; use the top-level fields", ErrConfig)
	case c.JWKS.Issuer != "" || c.JWKS.JWKSURL != "":
		return fmt.Errorf("%w: JWKS.Issuer and JWKS.JWKSURL must be empty; pass a jwks.Source in Keys for a fixed JWKS URL", ErrConfig)
	case c.Metadata.Resource != "" && c.Metadata.Resource != c.Resource:
		return fmt.Errorf("%w: Metadata.Resource differs from Resource", ErrConfig)
	case c.WaitForKeys < 0:
		return fmt.Errorf("%w: negative WaitForKeys", ErrConfig)
	}
	for i, iss := range c.Issuers {
		if iss == "" {
			return fmt.Errorf("%w: Issuers[%d] is empty", ErrConfig, i)
		}
		if slices.Contains(c.Issuers[:i], iss) {
			return fmt.Errorf("%w: Issuers[%d] repeats %q", ErrConfig, i, iss)
		}
	}
	for iss, ks := range c.Keys {
		if !slices.Contains(c.Issuers, iss) {
			return fmt.Errorf("%w: Keys has %q, which is not in Issuers", ErrConfig, iss)
		}
		if ks == nil {
			return fmt.Errorf("%w: Keys[%q] is nil", ErrConfig, iss)
		}
	}
	for _, as := range c.Metadata.AuthorizationServers {
		if !slices.Contains(c.Issuers, as) {
			return fmt.Errorf("%w: Metadata.AuthorizationServers has %q, which is not in Issuers", ErrConfig, as)
		}
	}
	return nil
}

// metadata returns the protected-resource metadata of c.
func (c *Config) metadata() prm.Metadata {
	md := c.Metadata
	md.Resource = c.Resource
	if md.AuthorizationServers == nil {
		md.AuthorizationServers = slices.Clone(c.Issuers)
	}
	return md
}

// Guard is an MCP server's authorization: a token validator with a key
// source per trusted issuer, and the middleware in front of the MCP
// endpoint, serving the protected-resource metadata. Create it with [New]
// and stop its key sources with [Guard.Close]. It is safe for concurrent
// use.
type Guard struct {
	v       *validate.Validator
	mw      *middleware.Middleware
	sources []*jwks.Source // created by New, closed by Close
	mcpPath string
	issuers []validate.Issuer // every issuer's key source, for health.go
	now     func() time.Time
}

// New checks cfg and wires the packages: a [jwks.Source] for each issuer
// not in cfg.Keys (started at once, never blocking: the first keys are
// fetched in the background), a [validate.Validator] whose audience is
// cfg.Resource, and a [middleware.Middleware] publishing the RFC 9728
// metadata. It adds no behaviour of its own: every check is the
// middleware's and the validator's, with their defaults. Errors wrap
// [ErrConfig] (or [ErrNotReady], with Config.WaitForKeys); on error no
// goroutine is left running.
func New(cfg Config) (*Guard, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	md := cfg.metadata()
	if err := md.Validate(); err != nil { // before any key source starts
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if _, _, err := prm.Paths(cfg.Resource); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	u, err := url.Parse(cfg.Resource)
	if err != nil {
		return nil, fmt.Errorf("%w: Resource: %w", ErrConfig, err)
	}
	g := &Guard{mcpPath: u.EscapedPath()}
	if g.mcpPath == "" {
		g.mcpPath = "/"
	}
	fail := func(format string, args ...any) (*Guard, error) {
		_ = g.Close()
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}

	vc := cfg.Validate
	vc.Issuers = make([]validate.Issuer, 0, len(cfg.Issuers))
	for _, iss := range cfg.Issuers {
		ks := cfg.Keys[iss]
		if ks == nil {
			jc := cfg.JWKS
			jc.Issuer = iss
			if jc.Now == nil {
				jc.Now = cfg.Validate.Now
			}
			if jc.Logger == nil {
				jc.Logger = cfg.Logger
			}
			src, err := jwks.New(jc)
			if err != nil {
				return fail("key source of %q: %w", iss, err)
			}
			g.sources = append(g.sources, src)
			ks = src
		}
		vc.Issuers = append(vc.Issuers, validate.Issuer{Issuer: iss, Keys: ks})
	}
	if vc.Audiences == nil {
		vc.Audiences = []string{cfg.Resource}
	}
	if cfg.Middleware.DPoP.Policy != middleware.DPoPOff {
		vc.AllowConfirmation = true // DPoP-bound tokens carry cnf; the middleware checks the binding
	}
	if g.v, err = validate.New(vc); err != nil {
		return fail("Validate: %w", err)
	}
	g.issuers, g.now = vc.Issuers, vc.Now
	if g.now == nil {
		g.now = time.Now
	}

	mc := cfg.Middleware
	mc.Validator = g.v
	if cfg.TokenValidator != nil {
		tv, err := cfg.TokenValidator(g.v)
		if err != nil {
			return fail("TokenValidator: %w", err)
		}
		if tv == nil {
			return fail("TokenValidator returned nil")
		}
		mc.Validator = tv
	}
	mc.Metadata = md
	mc.Scopes = cfg.Scopes
	mc.Operations = cfg.Operations
	if mc.Now == nil {
		mc.Now = vc.Now
	}
	if mc.Logger == nil {
		mc.Logger = cfg.Logger
	}
	if g.mw, err = middleware.New(mc); err != nil {
		return fail("Middleware: %w", err)
	}
	if cfg.WaitForKeys > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.WaitForKeys)
		defer cancel()
		if err := g.WaitReady(ctx); err != nil {
			_ = g.Close()
			return nil, err
		}
	}
	return g, nil
}

// Handler returns next protected by the middleware
// ([middleware.Middleware.Handler]): a func(http.Handler) http.Handler, also
// usable as a gorilla/mux middleware. It does not serve the metadata; see
// [Guard.Mount].
func (g *Guard) Handler(next http.Handler) http.Handler { return g.mw.Handler(next) }

// Mux is the registration method of [http.ServeMux], and of routers with
// the same method (chi).
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

var _ Mux = (*http.ServeMux)(nil)

// Route is one handler to register at a path, as [Guard.Routes] returns it.
type Route struct {
	// Pattern is a URL path, usable verbatim as an http.ServeMux, chi or
	// gorilla/mux pattern.
	Pattern string
	// Handler serves it.
	Handler http.Handler
}

// Routes returns what [Guard.Mount] registers, for routers whose Handle
// method has another signature, such as gorilla/mux (whose Handle returns
// a *Route):
//
//	for _, rt := range g.Routes(mcpHandler) {
//		router.Handle(rt.Pattern, rt.Handler)
//	}
//
// They are, in order: the protected-resource metadata, unprotected, at the
// RFC 9728 §3.1 path-inserted path and at the root well-known path (once
// when the two are equal); then mcp behind [Guard.Handler] at the path of
// Config.Resource ("/" when it has none; on an http.ServeMux "/" also
// matches every path nothing else matches, so those are protected too).
func (g *Guard) Routes(mcp http.Handler) []Route {
	inserted, root := g.mw.MetadataPaths()
	meta := g.mw.MetadataHandler()
	rs := []Route{{inserted, meta}}
	if root != inserted {
		rs = append(rs, Route{root, meta})
	}
	return append(rs, Route{g.mcpPath, g.mw.Handler(mcp)})
}

// Mount registers the [Guard.Routes] on mux: the metadata without a token,
// mcp (the MCP Streamable HTTP handler) behind the middleware. Like every
// mux registration, it panics on a pattern mux already has.
func (g *Guard) Mount(mux Mux, mcp http.Handler) {
	for _, rt := range g.Routes(mcp) {
		mux.Handle(rt.Pattern, rt.Handler)
	}
}

// Middleware returns the middleware, for [middleware.Middleware.RequireScopes],
// Challenge, Authenticate and the metadata handler.
func (g *Guard) Middleware() *middleware.Middleware { return g.mw }

// Validator returns the token validator.
func (g *Guard) Validator() *validate.Validator { return g.v }

// Close stops the key sources New created, waiting for their goroutines to
// end. Sources passed in Config.Keys are the caller's and stay open. The
// Guard still answers afterwards with the keys it has, but never fetches
// again. Close is idempotent.
func (g *Guard) Close() error {
	var errs []error
	for _, s := range g.sources {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
