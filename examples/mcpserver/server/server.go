package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/gorilla/mux"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/gosdk"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
)

// ImplementationName is the MCP serverInfo name.
const ImplementationName = "mcpguard-example"

// ErrConfig reports an unusable Config. New wraps it.
var ErrConfig = errors.New("server: invalid config")

// Config configures New. It is copied; later changes have no effect.
type Config struct {
	// Resource is the canonical URL of the MCP endpoint (RFC 8707 §2, RFC
	// 9728 §2 "resource"), e.g. "https://mcp.example.com/mcp": the
	// audience tokens must carry and the only source of every URL the
	// server publishes. Its path is where the MCP endpoint is mounted.
	// Required; https, or http on a loopback host.
	Resource string
	// AuthorizationServers are the issuer identifiers published in the
	// protected-resource metadata (RFC 9728 §2). Required, at least one.
	AuthorizationServers []string
	// Validator validates access tokens. Required. It must accept Resource
	// as an audience.
	Validator middleware.TokenValidator
	// Scopes are the base scopes every request needs, sent in the 401
	// challenge and published in scopes_supported with the tools' scopes.
	// Nil means none: any valid token for the audience may list tools and
	// call whoami.
	Scopes []string
	// ResourceName is the RFC 9728 resource_name. Empty means
	// "mcpguard example notes server".
	ResourceName string
	// MaxNotesPerTenant bounds the notes kept per tenant. Zero means
	// DefaultMaxNotesPerTenant.
	MaxNotesPerTenant int
	// MaxTenants bounds the tenants with notes. Zero means
	// DefaultMaxTenants.
	MaxTenants int
	// Logger receives the middleware's refusals and the go-sdk's transport
	// log. Nil discards.
	Logger *slog.Logger
	// Now stamps notes and drives the middleware's step-up window. Nil
	// means time.Now.
	Now func() time.Time
	// DPoP is the middleware's DPoP configuration (RFC 9449). The zero
	// value is off: Bearer tokens only. With a policy other than off, the
	// Validator must accept tokens with cnf (validate.Config.AllowConfirmation).
	DPoP middleware.DPoPConfig

	// Session mode and policy-filtered lists (the gosdk adapter).

	// Stateful serves MCP with the go-sdk's default, stateful handler
	// (mcp.NewStreamableHTTPHandler(f, nil) plus JSONResponse): sessions
	// with Mcp-Session-Id, GET streams and DELETE, for MCP 2025-11-25 and
	// older; each session is bound to the principal that created it. False
	// (the default) serves statelessly, which MCP 2026-07-28 needs.
	Stateful bool
	// Lists is what tools/list answers show (middleware.Config.Lists): the
	// zero value annotates every tool with the scopes it needs, so that a
	// client that picks tools from the list can call one and step up.
	Lists middleware.ListMode
	// Public lists operations served without a token
	// (middleware.OperationPolicy.Public). The zero value lists none.
	Public middleware.PublicOperations
	// Rules are the middleware's rules beyond scopes
	// (middleware.Config.Rules, docs/policy.md "Rules"). Nil means none.
	Rules []middleware.Rule
	// AllowedOrigins are the browser origins allowed besides the
	// resource's own (middleware.Config.AllowedOrigins): their requests
	// pass the Origin check and get CORS answers. Nil means none.
	AllowedOrigins []string
}

func (c Config) withDefaults() Config {
	c.AuthorizationServers = slices.Clone(c.AuthorizationServers)
	c.Scopes = slices.Clone(c.Scopes)
	c.AllowedOrigins = slices.Clone(c.AllowedOrigins)
	c.Public = middleware.PublicOperations{
		Methods: slices.Clone(c.Public.Methods), Tools: slices.Clone(c.Public.Tools),
		Prompts: slices.Clone(c.Public.Prompts), Resources: slices.Clone(c.Public.Resources),
	}
	if c.ResourceName == "" {
		c.ResourceName = "mcpguard example notes server"
	}
	if c.MaxNotesPerTenant == 0 {
		c.MaxNotesPerTenant = DefaultMaxNotesPerTenant
	}
	if c.MaxTenants == 0 {
		c.MaxTenants = DefaultMaxTenants
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Server is the protected MCP server. It is an http.Handler.
type Server struct {
	handler http.Handler
	mw      *middleware.Middleware
	mcp     *mcp.Server
}

// New builds the server: the go-sdk MCP server and its tools, the
// middleware with the per-tool scopes, and the router.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if cfg.Validator == nil {
		return nil, fmt.Errorf("%w: Validator is required", ErrConfig)
	}
	if cfg.MaxNotesPerTenant < 0 || cfg.MaxTenants < 0 {
		return nil, fmt.Errorf("%w: negative note limits", ErrConfig)
	}
	u, err := url.Parse(cfg.Resource)
	if err != nil || u.Path == "" || u.Path == "/" {
		return nil, fmt.Errorf("%w: Resource must be an absolute URL with a path, such as http://127.0.0.1:8080/mcp", ErrConfig)
	}
	mw, err := middleware.New(middleware.Config{
		Validator: cfg.Validator,
		Metadata: prm.Metadata{
			Resource:               cfg.Resource,
			AuthorizationServers:   cfg.AuthorizationServers,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           cfg.ResourceName,
		},
		Scopes:         cfg.Scopes,
		Operations:     middleware.OperationPolicy{Tools: toolScopes(), Public: cfg.Public},
		Lists:          cfg.Lists,
		Rules:          cfg.Rules,
		Logger:         cfg.Logger,
		Now:            cfg.Now,
		DPoP:           cfg.DPoP,
		AllowedOrigins: cfg.AllowedOrigins,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}

	// The go-sdk logs every stateless request ("session connected") at
	// Info; only its warnings are worth a line here.
	sdkLog := slog.New(minLevel{cfg.Logger.Handler(), slog.LevelWarn})
	ms := mcp.NewServer(&mcp.Implementation{Name: ImplementationName, Version: "0.1.0"}, &mcp.ServerOptions{
		Logger: sdkLog,
	})
	addTools(ms, newNotes(cfg.MaxNotesPerTenant, cfg.MaxTenants, cfg.Now))
	// The adapter binds sessions to principals, gives every handler the
	// principal of its own request and shows tools/list as cfg.Lists says.
	ad, err := gosdk.New(gosdk.Config{Middleware: mw})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	ad.Install(ms)
	// Stateless by default: the 2026-07-28 revision has no sessions, and
	// the go-sdk serves it only in stateless mode; 2025-11-25 clients work
	// too (their initialize is answered, no Mcp-Session-Id is issued).
	// Stateful is the go-sdk's default. JSONResponse keeps answers plain
	// JSON, which curl users can read.
	mh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, &mcp.StreamableHTTPOptions{
		Stateless:    !cfg.Stateful,
		JSONResponse: true,
		Logger:       sdkLog,
	})

	r := mux.NewRouter()
	inserted, root := mw.MetadataPaths()
	r.Handle(inserted, mw.MetadataHandler())
	if root != inserted {
		r.Handle(root, mw.MetadataHandler())
	}
	r.Handle(u.EscapedPath(), ad.Handler(liftDeadlines(mh))) // lifted for authenticated principals only: deadlines.go
	return &Server{handler: r, mw: mw, mcp: ms}, nil
}

// ServeHTTP serves the MCP endpoint and the protected-resource metadata.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// ResourceMetadataURL returns the RFC 9728 metadata URL sent in every
// challenge.
func (s *Server) ResourceMetadataURL() string { return s.mw.ResourceMetadataURL() }

// MetadataPaths returns the URL paths the metadata is served at: the
// path-inserted one and the root one (equal when the resource has no path).
func (s *Server) MetadataPaths() (pathInserted, root string) { return s.mw.MetadataPaths() }

// minLevel is a slog.Handler that drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
