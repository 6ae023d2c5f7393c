package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// shutdownTimeout bounds the graceful shutdown after SIGINT/SIGTERM (or
// the end of run's context): in-flight requests get this long to finish.
const shutdownTimeout = 10 * time.Second

// devCLIClientID is the pre-registered public client of the embedded
// authorization server, for trying the authorization code flow with curl.
// Its redirect URI is http://127.0.0.1/callback on any port (RFC 8252
// §7.3); nothing needs to listen there, the code is read from the
// Location header.
const devCLIClientID = "mcpguard-dev-cli"

// Errors of run that need no further context.
var (
	errResourceRequired = errors.New("-resource is required when -addr is not a loopback address: tokens are bound to the public URL of the MCP endpoint")
	errDevASNotLoopback = errors.New("-dev-as-addr must be a loopback address: the embedded authorization server is for development only")
)

// endpoints are the URLs a started server uses, reported to the ready
// callback of run (for tests).
type endpoints struct {
	// Listen is the address the MCP server is bound to (-addr, with the
	// port chosen by the system for port 0).
	Listen string
	// MCP is the MCP endpoint, the resource identifier.
	MCP string
	// Metadata is the RFC 9728 metadata URL sent in challenges.
	Metadata string
	// Issuer is the authorization server's issuer identifier.
	Issuer string
	// DevAS is true when Issuer is the embedded development server.
	DevAS bool
}

// run parses args, starts the MCP server (and, without -issuer, the
// embedded development authorization server), prints where they are to
// stderr, and serves until ctx ends; then it shuts both servers down
// gracefully and returns nil. ready, if not nil, is called once both
// servers accept connections.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, ready func(endpoints)) error {
	o, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))

	// Check before binding anything, so that a mistake never opens a
	// non-loopback port, even briefly.
	if o.resource == "" && !isLoopbackAddr(o.addr) {
		return errResourceRequired
	}
	if o.issuer == "" && !isLoopbackAddr(o.devASAddr) {
		return errDevASNotLoopback
	}
	if err := checkTokenMode(o); err != nil {
		return err
	}
	if err := checkCIMDDev(o); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on -addr: %w", err)
	}
	defer ln.Close()
	resource := o.resource
	if resource == "" {
		resource = "http://" + ln.Addr().String() + "/mcp"
	}

	var (
		issuer  string
		keys    validate.KeySource
		dev     *devmint.Server
		devLn   net.Listener
		closers []io.Closer
		health  []*jwks.Source // for /readyz
	)
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	ent, err := startDevIdP(o)
	if err != nil {
		return err
	}
	if ent != nil {
		closers = append(closers, ent.ln)
	}
	if o.issuer == "" {
		devLn, err = net.Listen("tcp", o.devASAddr)
		if err != nil {
			return fmt.Errorf("listen on -dev-as-addr: %w", err)
		}
		closers = append(closers, devLn)
		issuer = "http://" + devLn.Addr().String()
		cimdCfg, err := cimdResolverConfig(o)
		if err != nil {
			return err
		}
		devCfg := devas.Config{
			CIMD:        cimdCfg,
			Issuer:      issuer,
			Resources:   []string{resource},
			Scopes:      union(o.scopes, []string{server.ScopeNotesRead, server.ScopeNotesWrite}),
			AutoApprove: o.devAutoApprove,
			EnableDCR:   true,
			Clients: []cimd.Client{{Document: cimd.Document{
				ClientID:                devCLIClientID,
				ClientName:              "mcpguard development CLI (curl)",
				RedirectURIs:            []string{"http://127.0.0.1/callback"},
				TokenEndpointAuthMethod: "none",
				ApplicationType:         "native",
			}}},
			Logger: logger.With("component", "devas"),
		}
		ent.configure(&devCfg, o)
		dev, err = devmint.New(devCfg)
		if err != nil {
			return fmt.Errorf("embedded authorization server: %w", err)
		}
		keys = &validate.StaticKeys{Set: dev.PublicKeys()}
	} else {
		issuer = o.issuer
		if o.tokenMode != modeIntrospect { // introspection alone needs no keys
			src, err := jwks.New(jwks.Config{Issuer: issuer, JWKSURL: o.jwksURL, RefreshInterval: o.jwksRefreshInterval,
				RefreshRateLimit: o.jwksRefreshRateLimit, WaitTimeout: o.jwksWaitTimeout, Logger: logger.With("component", "jwks")})
			if err != nil {
				return fmt.Errorf("-issuer: %w", err)
			}
			closers = append(closers, src)
			keys = src
			health = append(health, src)
			if err := waitKeys(ctx, src, o.waitKeys); err != nil {
				return fmt.Errorf("-issuer: %w", err)
			}
		}
	}

	v, err := newValidator(o, issuer, keys, union([]string{resource}, o.audiences), logger)
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{
		Resource:             resource,
		AuthorizationServers: []string{issuer},
		Validator:            v,
		Scopes:               o.scopes,
		Logger:               logger,
		DPoP:                 middleware.DPoPConfig{Policy: o.dpop},
		Stateful:             o.stateful,
		Lists:                o.lists,
		AllowedOrigins:       o.allowedOrigins,
	})
	if err != nil {
		return err
	}

	top := http.NewServeMux()
	top.Handle("/readyz", mcpguard.ReadyHandler(health...))
	top.Handle("/", srv)
	servers := []*http.Server{newHTTPServer(top, logger)}
	listeners := []net.Listener{ln}
	if dev != nil {
		servers = append(servers, newHTTPServer(dev, logger))
		listeners = append(listeners, devLn)
	}
	if ent != nil {
		servers = append(servers, newHTTPServer(ent.idp, logger))
		listeners = append(listeners, ent.ln)
	}
	errc := make(chan error, len(servers))
	for i, hs := range servers {
		go func() { errc <- hs.Serve(listeners[i]) }()
	}

	ep := endpoints{Listen: ln.Addr().String(), MCP: resource, Metadata: srv.ResourceMetadataURL(), Issuer: issuer, DevAS: dev != nil}
	printWelcome(stderr, ep, o, dev)
	ent.printEnterprise(stderr, ep)
	if ready != nil {
		ready(ep)
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	var errs []error
	for _, hs := range servers {
		if err := hs.Shutdown(sctx); err != nil {
			errs = append(errs, err)
		}
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		errs = append(errs, serveErr)
	}
	return errors.Join(errs...)
}

// waitKeys waits up to d for src's first key set (fail fast: a mistyped
// issuer stops start-up with the cause); d <= 0 does not wait.
func waitKeys(ctx context.Context, src *jwks.Source, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return src.WaitReady(ctx)
}

// Server timeouts (issue #11 item 6). They bound every connection, and
// above all those of clients without a valid token:
//   - readHeaderTimeout: the request line and headers;
//   - readTimeout: the whole request, body included (a token holder has
//     this long to send a body of at most the middleware's 1 MiB; a
//     tokenless POST is refused before its body and the connection closed);
//   - writeTimeout: the answer; refusals and plain JSON answers are small;
//   - idleTimeout: a kept-alive connection between requests.
//
// SSE streams are long-lived: an authorized request gets its read
// deadline cleared and its write deadline extended to
// server.StreamWriteTimeout behind the middleware (server/deadlines.go),
// so these short values never cut an authorized stream, and never cancel
// its context (net/http cancels a request's context when a read deadline
// passes during the handler).
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
)

// newHTTPServer returns an http.Server with bounded header, read, write
// and idle times (see the constants above).
func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// isLoopbackAddr reports whether the host of the host:port addr is a
// loopback IP literal or "localhost". An empty host (all interfaces) is not.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// union returns a followed by the elements of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// printWelcome prints the URLs and how to try the server.
func printWelcome(w io.Writer, ep endpoints, o options, dev *devmint.Server) {
	scopes := strings.Join(o.scopes, " ")
	if scopes == "" {
		scopes = "(none)"
	}
	fmt.Fprintf(w, `
mcpguard example MCP server
  MCP endpoint (resource):      %s
  protected-resource metadata:  %s
  authorization server:         %s
  readiness probe:              http://%s/readyz
  base scopes:                  %s; notes_list needs %s, notes_write needs %s
`, ep.MCP, ep.Metadata, ep.Issuer, ep.Listen, scopes, server.ScopeNotesRead, server.ScopeNotesWrite)
	printDPoP(w, o) // dpop.go
	if dev == nil {
		fmt.Fprintf(w, `
Tokens must come from %s, with audience %s;
%s.
Try: curl -i -X POST %s -H 'Content-Type: application/json' -d '{}'
and follow the resource_metadata URL of the 401. See docs/example.md.

`, ep.Issuer, ep.MCP, describeTokenMode(o), ep.MCP)
		return
	}
	if o.devInsecureCIMDLoopback {
		fmt.Fprint(w, cimdDevWarning)
	}
	approve := "it approves every authorization request at once (-dev-auto-approve)"
	if !o.devAutoApprove {
		approve = "it shows a consent page for every authorization request"
	}
	tok, err := dev.IssueToken("dev-user", "tenant-a", devCLIClientID, ep.MCP,
		union(o.scopes, []string{server.ScopeNotesRead}))
	if err != nil {
		tok = "(could not mint a token: " + err.Error() + ")"
	}
	fmt.Fprintf(w, `
The authorization server is the embedded DEVELOPMENT server: its keys live
in memory and it signs in every user as %q of tenant %q;
%s. Never expose it.

How to try it: a request without a token gets 401 and a WWW-Authenticate
header whose resource_metadata points at the metadata above; that names the
authorization server, whose metadata is at
%s/.well-known/oauth-authorization-server.
An MCP client (for example the MCP Go SDK with auth.NewAuthorizationCodeHandler)
does all of this by itself: point it at %s.
With curl, this development token (sub %s, tenant %s, scopes %s, valid 1h) works:

  TOKEN=%s

  curl -s %s -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: whoami' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"curl","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}'

notes_write answers 403 insufficient_scope with that token: step-up
authorization. docs/example.md walks through the whole authorization code
flow with curl (client_id %s) and through connecting a real issuer.

`, "dev-user", "tenant-a", approve, ep.Issuer, ep.MCP,
		"dev-user", "tenant-a", strings.Join(union(o.scopes, []string{server.ScopeNotesRead}), " "),
		tok, ep.MCP, devCLIClientID)
}
