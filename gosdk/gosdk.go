package gosdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/middleware"
)

// ErrConfig reports an unusable [Config]. Only [New] returns it.
var ErrConfig = errors.New("gosdk: invalid config")

// extraKey is the key of the [middleware.Principal] in auth.TokenInfo.Extra.
const extraKey = "github.com/mcpguard/mcpguard/middleware.Principal"

// Config configures an [Adapter].
type Config struct {
	// Middleware authorizes every request. Required.
	Middleware *middleware.Middleware
}

// Adapter puts the middleware in front of a go-sdk Streamable HTTP handler
// and carries each request's principal to its MCP handlers. Create it with
// [New]; it is safe for concurrent use.
type Adapter struct {
	m      *middleware.Middleware
	bearer func(http.Handler) http.Handler
}

// New checks cfg and returns an Adapter.
func New(cfg Config) (*Adapter, error) {
	if cfg.Middleware == nil {
		return nil, fmt.Errorf("%w: no Middleware", ErrConfig)
	}
	a := &Adapter{m: cfg.Middleware}
	// The token was validated by the middleware (with its own leeway)
	// before this runs; the go-sdk's expiry check must not refuse it again
	// with a plain-text 401, so its skew is made irrelevant.
	a.bearer = auth.RequireBearerToken(verifyFromContext, &auth.RequireBearerTokenOptions{
		AllowMissingExpiration: true,
		ClockSkew:              skewNeverRefuse,
	})
	return a, nil
}

// skewNeverRefuse is far beyond any token lifetime.
const skewNeverRefuse = 100 * 365 * 24 * time.Hour

// Handler returns h, a go-sdk handler (mcp.NewStreamableHTTPHandler, in
// either mode), behind [middleware.Middleware.Handler] and [Adapter.TokenInfo]:
// mount it at the MCP endpoint. h receives each request with the go-sdk's
// auth.TokenInfo of the request's principal in its context, which fills
// req.Extra.TokenInfo. Sessions are bound to their creator by the
// middleware itself, with or without the adapter.
func (a *Adapter) Handler(h http.Handler) http.Handler {
	return a.m.Handler(a.TokenInfo(h))
}

// TokenInfo returns the glue alone, for chains that run
// [middleware.Middleware.Handler] (or Guard.Handler) themselves: it must
// run behind it, and answers 401 ([middleware.Error{Reason: "no_principal"}], through
// Middleware.Challenge) for a request without a principal. It hands next
// the request with the go-sdk's auth.TokenInfo of the principal
// (UserID p.UserID(), the token's Scopes and Expiration) in its context,
// set by auth.RequireBearerToken, and without the principal itself. The
// principal is removed so that a
// stateful session, whose context is its first request's, never carries
// a principal; [Adapter.Install] gives each handler the principal of its
// own request. Session binding is the middleware's (a request for another
// principal's session never gets here); the go-sdk's own check of
// TokenInfo.UserID stays behind it and agrees.
func (a *Adapter) TokenInfo(next http.Handler) http.Handler {
	if next == nil {
		panic("gosdk: TokenInfo(nil)")
	}
	inner := a.bearer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if orig, ok := r.Context().Value(placeholderKey{}).([]string); ok {
			r.Header.Del("Authorization") // the placeholder never reaches the go-sdk
			if orig != nil {
				r.Header["Authorization"] = orig // the DPoP credentials
			}
		}
		next.ServeHTTP(w, r.WithContext(middleware.ContextWithPrincipal(r.Context(), nil)))
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := middleware.PrincipalFromContext(r.Context())
		if !ok {
			a.m.Challenge(w, r, middleware.Error{Reason: "no_principal"})
			return
		}
		if p.Anonymous || p.SenderConstrained || len(r.Header.Values("Authorization")) == 0 {
			// auth.RequireBearerToken, the only setter of the go-sdk's
			// context key, needs a bearer header; a public request has
			// none, a DPoP request (RFC 9449) has the DPoP scheme, the
			// middleware's internal DELETE of a session it ended has
			// none. The verifier ignores the value and uses the
			// principal.
			r = r.Clone(context.WithValue(r.Context(), placeholderKey{}, r.Header.Values("Authorization")))
			r.Header.Set("Authorization", "Bearer anonymous")
		}
		inner.ServeHTTP(w, r)
	})
}

type placeholderKey struct{}

// verifyFromContext is the go-sdk auth.TokenVerifier of [Adapter.TokenInfo]:
// the token was verified by the middleware, whose principal is in the
// request context.
func verifyFromContext(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	p, ok := middleware.PrincipalFromContext(r.Context())
	if !ok {
		return nil, auth.ErrInvalidToken // unreachable: TokenInfo checks first
	}
	return tokenInfo(p), nil
}

// tokenInfo returns the go-sdk auth.TokenInfo of p: UserID is
// p.UserID() (issuer, subject and tenant, or the client acting for itself;
// "anonymous" for the anonymous principal), which the go-sdk compares on
// every request of a session with the one that created it, so that a
// client that registers anew at step-up keeps its session, Scopes and Expiration are the token's, and Extra
// holds p (read it with [Principal]).
func tokenInfo(p *middleware.Principal) *auth.TokenInfo {
	return &auth.TokenInfo{
		UserID:     p.UserID(),
		Scopes:     p.Scopes,
		Expiration: p.Expiry,
		Extra:      map[string]any{extraKey: p},
	}
}

// Principal returns the principal of the request req, in any mode: the
// one req.Extra.TokenInfo carries, set by [Adapter.Handler] for this very
// HTTP request. It is the accessor to use in a handler when
// [Adapter.Install] is not used. It returns false for a request that did
// not come through the adapter.
func Principal(req mcp.Request) (*middleware.Principal, bool) {
	if req == nil {
		return nil, false
	}
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil, false
	}
	p, ok := extra.TokenInfo.Extra[extraKey].(*middleware.Principal)
	return p, ok && p != nil
}

// Install adds the adapter's receiving middleware to s: every method
// handler, and
// so every tool, prompt and resource handler, gets a context carrying the
// principal of its own request ([middleware.PrincipalFromContext]), or no
// principal at all. (List answers are shown as middleware.Config.Lists
// says by the middleware itself, for every server.)
// Call it once per server, before serving, and after adding other
// receiving middleware: the go-sdk runs the last added first, so those
// run inside it and see the principal too.
func (a *Adapter) Install(s *mcp.Server) {
	s.AddReceivingMiddleware(a.receive)
}

func (a *Adapter) receive(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		p, _ := Principal(req)
		ctx = middleware.ContextWithPrincipal(ctx, p) // nil p: no principal
		return next(ctx, method, req)
	}
}
