// Package proxycmd is "mcpguard proxy": mcpguard's whole authorization
// decision in front of any Streamable HTTP MCP server (package proxy),
// configured by flags for one upstream or by a YAML file (docs/proxy.md).
//
// Exit codes: 0 after a clean shutdown (or a valid -check), 1 for a
// configuration or start-up error, 2 for a usage error.
package proxycmd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/proxy"
)

// Exit codes.
const (
	exitOK     = 0
	exitError  = 1
	exitUsage  = 2
	devSubject = "dev-user"
)

// Server bounds. An authorized answer gets its read deadline cleared and
// each write bounded by the proxy's stream_write timeout instead, so these
// short values bound refusals and clients without a token.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	// The proxy's own bound of a request's head (package proxy refuses,
	// with 431, exactly what is past it); net/http reads this plus 4 KiB
	// of slack.
	maxHeaderBytes = 64 << 10
)

type options struct {
	addr, upstream, resource, issuer, config string
	scopes, origins                          []string
	toolScopes                               []string // NAME=SCOPE
	identity, dpop, assertionKey             string
	tlsCert, tlsKey                          string
	devAS                                    string
	otlpEndpoint, otelService                string
	metricsAddr                              string
	check                                    bool
	waitKeys, shutdown, watch                time.Duration
	logLevel                                 slog.Level
	command                                  []string // after "--": a stdio server's argv
}

type listFlag struct{ list *[]string }

func (f listFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, " ")
}

func (f listFlag) Set(s string) error {
	*f.list = strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
	return nil
}

// appendFlag is a repeatable flag: each use adds one value.
type appendFlag struct{ list *[]string }

func (f appendFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, " ")
}

func (f appendFlag) Set(s string) error {
	*f.list = append(*f.list, s)
	return nil
}

type levelFlag struct{ l *slog.Level }

func (f levelFlag) String() string {
	if f.l == nil {
		return ""
	}
	return strings.ToLower(f.l.String())
}
func (f levelFlag) Set(s string) error { return f.l.UnmarshalText([]byte(s)) }

func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{addr: "127.0.0.1:8080", identity: "assertion", waitKeys: 10 * time.Second, shutdown: 10 * time.Second, logLevel: slog.LevelInfo}
	fs := flag.NewFlagSet("mcpguard proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", o.addr, "`host:port` to listen on")
	fs.StringVar(&o.upstream, "upstream", "", "`URL` of the MCP server's Streamable HTTP endpoint, e.g. http://127.0.0.1:3000/mcp")
	fs.StringVar(&o.resource, "resource", "", "public `URL` of the protected MCP endpoint, the audience of client tokens (default http://<addr>/mcp on a loopback -addr)")
	fs.StringVar(&o.issuer, "issuer", "", "issuer `URL` of the authorization server (https, or http on loopback)")
	fs.Var(listFlag{&o.scopes}, "scopes", "base `scopes` every request needs, space- or comma-separated")
	fs.Var(listFlag{&o.origins}, "allowed-origins", "browser `origins` allowed besides the resource's own")
	fs.Var(appendFlag{&o.toolScopes}, "tool-scope", "`NAME=SCOPE`: calling the tool NAME also needs SCOPE (a 403 insufficient_scope asks for it: step-up); repeatable")
	fs.StringVar(&o.identity, "identity", o.identity, "how the upstream learns the caller: `mode` assertion (a JWT signed by the proxy) or headers (plain X-Mcpguard-* headers, loopback or unix-socket upstream only)")
	fs.StringVar(&o.dpop, "dpop", "off", "DPoP (RFC 9449) `policy`: off, allowed or required")
	fs.StringVar(&o.assertionKey, "assertion-key", "", "PEM `file` of the assertion signing key (default: a key generated at start)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM `file` of the listener's certificate chain: serve HTTPS (TLS 1.2+), re-reading the files when they change")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM `file` of the listener's private key (with -tls-cert)")
	fs.StringVar(&o.config, "config", "", "YAML configuration `file` (docs/proxy.md); replaces -upstream, -resource, -issuer, -scopes, -identity, -dpop, -allowed-origins, -assertion-key")
	fs.DurationVar(&o.watch, "watch-config", 0, "also reload the -config file when its content changes, looking every `interval` (SIGHUP always reloads it); 0: off")
	fs.BoolVar(&o.check, "check", false, "validate the configuration, print the effective policy, then any warnings, then the verdict, and exit (non-zero on an error, not on a warning)")
	fs.StringVar(&o.devAS, "dev-as", "", "DEVELOPMENT ONLY: start the embedded authorization server on this loopback `host:port` (e.g. 127.0.0.1:9000) and trust it; instead of -issuer")
	fs.DurationVar(&o.waitKeys, "wait-keys", o.waitKeys, "how long start-up waits for every issuer's first key set before failing with the cause; 0 starts at once")
	fs.DurationVar(&o.shutdown, "shutdown-timeout", o.shutdown, "how long a shutdown lets answers finish: GET streams end at once, other answers get this long")
	fs.Var(levelFlag{&o.logLevel}, "log-level", "log `level`: debug, info, warn or error")
	fs.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "OpenTelemetry: export traces and metrics over OTLP/HTTP to the collector at this base `URL` (e.g. http://127.0.0.1:4318); default $OTEL_EXPORTER_OTLP_ENDPOINT; empty: off")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`host:port`/metrics, a listener of their own (OpenTelemetry's Prometheus exporter); empty: off")
	fs.StringVar(&o.otelService, "otel-service", "mcpguard-proxy", "OpenTelemetry service.name")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		// "-- command args...": a stdio server run per session, without a
		// shell (docs/proxy.md, "stdio upstreams").
		if i := len(args) - fs.NArg() - 1; i < 0 || args[i] != "--" {
			return o, fmt.Errorf("unexpected arguments: %q (a stdio server's command goes after --)", fs.Args())
		}
		o.command = fs.Args()
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "upstream" || f.Name == "identity" || f.Name == "config" })
		if set {
			return o, errors.New("a command after -- replaces -upstream and -identity, and cannot go with -config (put it in the file as stdio.command)")
		}
	}
	if o.config != "" {
		var set []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "upstream", "resource", "issuer", "scopes", "tool-scope", "identity", "dpop", "allowed-origins", "assertion-key", "dev-as", "tls-cert", "tls-key":
				set = append(set, "-"+f.Name)
			}
		})
		if len(set) > 0 {
			return o, fmt.Errorf("-config replaces %s: put them in the file (-dev-as is its dev_as, -tool-scope a route's operations.tools)", strings.Join(set, ", "))
		}
	}
	for _, ts := range o.toolScopes {
		if name, scope, ok := strings.Cut(ts, "="); !ok || name == "" || scope == "" || strings.ContainsAny(scope, " ,") {
			return o, fmt.Errorf("-tool-scope %q: want NAME=SCOPE, one scope", ts)
		}
	}
	return o, nil
}

// Run is "mcpguard proxy": args are the arguments after the subcommand's
// name. It serves until ctx ends, then shuts down gracefully.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpguard proxy: %v\n", err)
		return exitUsage
	}
	if err := run(ctx, o, getenv, stdout, stderr, nil); err != nil {
		fmt.Fprintf(stderr, "mcpguard proxy: %v\n", err)
		return exitError
	}
	return exitOK
}

// started is what run reports once serving (tests).
type started struct {
	Addr, Resource, Issuer string
	Proxy                  *proxy.Proxy
	DevAS                  *devmint.Server
	Reload                 func() error        // what SIGHUP does
	Current                func() *proxy.Proxy // the generation serving
	Metrics                string              // the /metrics URL, or ""
}

func run(ctx context.Context, o options, getenv func(string) string, stdout, stderr io.Writer, ready func(started)) error {
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	var cfg proxy.Config
	if o.config != "" {
		c, err := loadConfig(o.config, getenv)
		if err != nil {
			return err
		}
		cfg = c
		o.devAS = c.DevAS
		if o.devAS != "" && !isLoopbackAddr(o.devAS) {
			return errors.New("dev_as must be a loopback host:port: the embedded authorization server is for development only")
		}
	} else {
		if o.upstream == "" && len(o.command) == 0 {
			return errors.New("-upstream is required (the MCP server's URL, e.g. http://127.0.0.1:3000/mcp), or -config FILE")
		}
		if o.issuer == "" && o.devAS == "" {
			return errors.New("-issuer is required (your authorization server's issuer URL); for a local trial, -dev-as 127.0.0.1:9000 starts the embedded development server")
		}
		if o.issuer != "" && o.devAS != "" {
			return errors.New("-issuer and -dev-as exclude each other")
		}
		resource := o.resource
		if resource == "" {
			if !isLoopbackAddr(o.addr) {
				return errors.New("-resource is required when -addr is not a loopback address: tokens are bound to the proxy's public URL")
			}
			scheme := "http"
			if o.tlsCert != "" {
				scheme = "https"
			}
			resource = scheme + "://" + o.addr + "/mcp"
		}
		issuer := o.issuer
		if o.devAS != "" {
			if !isLoopbackAddr(o.devAS) {
				return errors.New("-dev-as must be a loopback address: the embedded authorization server is for development only")
			}
			issuer = "http://" + o.devAS
		}
		cfg = proxy.Config{
			Routes: []proxy.Route{{
				Resource: resource, Upstream: o.upstream, Issuers: []string{issuer}, Scopes: o.scopes,
				Identity: proxy.Identity{Mode: o.identity}, DPoP: o.dpop, AllowedOrigins: o.origins,
				Validation: proxy.Validation{TenantClaim: "tenant"},
			}},
			Assertion: proxy.Assertion{KeyFile: o.assertionKey},
			DevAS:     o.devAS,
			TLS:       proxy.TLS{CertFile: o.tlsCert, KeyFile: o.tlsKey},
		}
		for _, ts := range o.toolScopes {
			name, scope, _ := strings.Cut(ts, "=")
			ops := &cfg.Routes[0].Operations
			if ops.Tools == nil {
				ops.Tools = map[string][]string{}
			}
			if !contains(ops.Tools[name], scope) {
				ops.Tools[name] = append(ops.Tools[name], scope)
			}
		}
		if len(o.command) > 0 {
			r := &cfg.Routes[0]
			r.Identity = proxy.Identity{}
			r.Stdio = proxy.Stdio{Command: o.command, PassEnv: []string{"PATH", "HOME"}}
		}
	}
	var metricsURL string
	gens := &generations{path: o.config, getenv: getenv, waitKeys: o.waitKeys, log: logger, first: cfg}
	cfg.Logger = logger
	if o.otlpEndpoint == "" {
		o.otlpEndpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	var tel *telemetry
	var promReg *prometheus.Registry
	if o.metricsAddr != "" && !o.check {
		promReg = prometheus.NewRegistry()
	}
	if (o.otlpEndpoint != "" || promReg != nil) && !o.check {
		t, err := startTelemetry(ctx, o.otlpEndpoint, getenv("OTEL_EXPORTER_OTLP_HEADERS"), o.otelService, promReg)
		if err != nil {
			return err
		}
		tel = t
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := tel.shutdown(sctx); err != nil {
				logger.Warn("OpenTelemetry: flushing at shutdown failed", "error", err.Error())
			}
		}()
	}

	gens.prepare = func(c *proxy.Config) {
		c.Logger = logger
		if tel != nil {
			tel.config(c)
		}
	}
	gens.prepare(&cfg)
	if o.check {
		return check(ctx, cfg, o.waitKeys, stdout)
	}

	if promReg != nil {
		ml, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("listen on -metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metricsHandler(promReg))
		msrv := newServer(mux, logger)
		go func() { _ = msrv.Serve(ml) }()
		defer msrv.Close()
		metricsURL = "http://" + ml.Addr().String() + "/metrics"
	}
	var certs *certFiles
	if cfg.TLS.CertFile != "" && cfg.TLS.KeyFile != "" { // one without the other: proxy.New refuses it
		c, err := newCertFiles(cfg.TLS.CertFile, cfg.TLS.KeyFile, logger)
		if err != nil {
			return err
		}
		certs = c
	}

	// Bind before anything starts fetching, so that a mistake never opens
	// a port for long.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on -addr: %w", err)
	}
	defer ln.Close()
	var dev *devmint.Server
	var devSrv *http.Server
	if o.devAS != "" {
		dl, err := net.Listen("tcp", o.devAS)
		if err != nil {
			return fmt.Errorf("listen on -dev-as: %w", err)
		}
		issuer := "http://" + o.devAS
		var resources, scopes []string
		for _, r := range cfg.Routes {
			if contains(r.Issuers, issuer) {
				resources = append(resources, r.Resource)
				for _, s := range policyScopes(r) {
					if !contains(scopes, s) {
						scopes = append(scopes, s)
					}
				}
			}
		}
		if len(resources) == 0 {
			dl.Close()
			return fmt.Errorf("dev_as %s: no route lists %s in its issuers", o.devAS, issuer)
		}
		dev, err = devmint.New(devas.Config{
			Issuer: issuer, Resources: resources, Scopes: scopes,
			AutoApprove: true, EnableDCR: true, Logger: logger.With("component", "devas"),
		})
		if err != nil {
			dl.Close()
			return fmt.Errorf("embedded authorization server: %w", err)
		}
		devSrv = newServer(dev, logger)
		go func() { _ = devSrv.Serve(dl) }()
		defer devSrv.Close()
	}
	if o.config != "" {
		gens.share(&cfg)
		gens.loaded, _ = gens.readFile()
	}
	px, err := proxy.New(cfg)
	if err != nil {
		return err
	}
	gens.cur.Store(px)
	defer func() {
		for _, p := range gens.all() {
			_ = p.Close()
		}
	}()
	if o.waitKeys > 0 {
		wctx, cancel := context.WithTimeout(ctx, o.waitKeys)
		err := px.WaitReady(wctx)
		cancel()
		if err != nil {
			return err
		}
	}
	var h http.Handler = gens
	if tel != nil {
		h = tel.handler(gens)
	}
	srv := newServer(h, logger)
	scheme := "http"
	var serve func() error = func() error { return srv.Serve(ln) }
	if certs != nil {
		srv.TLSConfig = certs.tlsConfig()
		scheme = "https"
		serve = func() error { return srv.ServeTLS(ln, "", "") }
	}
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	printBanner(stderr, scheme, ln.Addr().String(), cfg, px, dev)
	if metricsURL != "" {
		fmt.Fprintf(stderr, "  Prometheus metrics: %s\n\n", metricsURL)
	}
	reload := func(why string) error {
		if o.config == "" {
			logger.Warn("configuration reload: nothing to reload without -config", "trigger", why)
			return errors.New("no -config")
		}
		return gens.reload(ctx, why)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_ = reload("SIGHUP")
			}
		}
	}()
	if o.watch > 0 && o.config != "" {
		go gens.watch(ctx, o.watch)
	}
	if ready != nil {
		st := started{Addr: ln.Addr().String(), Resource: cfg.Routes[0].Resource, Issuer: cfg.Routes[0].Issuers[0], Proxy: px, DevAS: dev,
			Reload: func() error { return reload("test") }, Current: gens.cur.Load, Metrics: metricsURL}
		ready(st)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	logger.Info("shutting down")
	// GET streams never end by themselves: end them now, cleanly (the
	// client resumes elsewhere with Last-Event-ID); other answers get
	// half the timeout to finish, then are ended too.
	for _, p := range gens.all() {
		p.EndGetStreams()
	}
	t := time.AfterFunc(o.shutdown/2, func() {
		for _, p := range gens.all() {
			p.EndAnswers()
		}
	})
	defer t.Stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.shutdown)
	defer cancel()
	err = srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close()
	}
	if devSrv != nil {
		_ = devSrv.Shutdown(sctx)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return err
}

// check builds the proxy of cfg without serving it, prints its effective
// policy, waits up to wait for every issuer's first key set, then prints
// every warning (what the build and the key sources logged, and keys not
// loaded; one "warning:" line each), then the verdict. Only an error
// fails; warnings do not.
func check(ctx context.Context, cfg proxy.Config, wait time.Duration, stdout io.Writer) error {
	var warnings bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&warnings, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
				return slog.Attr{}
			}
			return a
		},
	}))
	px, err := proxy.New(cfg)
	if err != nil {
		return err
	}
	px.Describe(stdout)
	var keysErr error
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		keysErr = px.WaitReady(wctx)
		cancel()
	}
	_ = px.Close() // stops the key sources: what they logged so far is in warnings
	n := 0
	if keysErr != nil {
		fmt.Fprintf(stdout, "warning: keys not loaded within -wait-keys %s: %s\n", wait, strings.ReplaceAll(keysErr.Error(), "\n", "; "))
		n++
	}
	for line := range strings.Lines(warnings.String()) {
		fmt.Fprintf(stdout, "warning: %s", line)
		n++
	}
	if n > 0 {
		fmt.Fprintf(stdout, "configuration OK (%d warnings)\n", n)
		return nil
	}
	fmt.Fprintln(stdout, "configuration OK")
	return nil
}

// maxConfigBytes bounds the -config file; proxy.Parse refuses a larger
// document.
const maxConfigBytes = 1 << 20

// loadConfig reads and parses the -config file, reading at most one
// byte more than proxy.Parse accepts. Errors wrap proxy.ErrConfig.
func loadConfig(path string, getenv func(string) string) (proxy.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return proxy.Config{}, fmt.Errorf("%w: %w", proxy.ErrConfig, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return proxy.Config{}, fmt.Errorf("%w: %w", proxy.ErrConfig, err)
	}
	return proxy.Parse(path, b, getenv)
}

// policyScopes are the scopes the development server may grant: every
// scope of the route's policy.
func policyScopes(r proxy.Route) []string {
	out := append([]string{}, r.Scopes...)
	add := func(ss []string) {
		for _, s := range ss {
			if !contains(out, s) {
				out = append(out, s)
			}
		}
	}
	for _, m := range []map[string][]string{r.Operations.Methods, r.Operations.Tools, r.Operations.Prompts} {
		for _, ss := range m {
			add(ss)
		}
	}
	for _, rr := range r.Operations.Resources {
		add(rr.Scopes)
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

func newServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// isLoopbackAddr reports whether the host of addr is a loopback IP or
// localhost.
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

func printBanner(w io.Writer, scheme, addr string, cfg proxy.Config, px *proxy.Proxy, dev *devmint.Server) {
	fmt.Fprintf(w, "\nmcpguard proxy listening on %s\n", addr)
	for _, r := range cfg.Routes {
		up := r.Upstream
		if len(r.Stdio.Command) > 0 {
			per := "session"
			if r.Stdio.PerUser {
				per = "user"
			}
			up = fmt.Sprintf("stdio %q (a process per %s)", r.Stdio.Command, per)
		}
		fmt.Fprintf(w, "  %s -> %s (issuers %s)\n", r.Resource, up, strings.Join(r.Issuers, " "))
	}
	if p := px.JWKSPath(); p != "" {
		fmt.Fprintf(w, "  assertion issuer %s, public keys at %s://%s%s\n", px.AssertionIssuer(), scheme, addr, p)
	}
	fmt.Fprintf(w, "  health: %s://%s/healthz, readiness: %s://%s/readyz\n", scheme, addr, scheme, addr)
	if dev != nil {
		r := cfg.Routes[0]
		for _, x := range cfg.Routes {
			if contains(x.Issuers, "http://"+cfg.DevAS) {
				r = x
				break
			}
		}
		tok, err := dev.IssueToken(devSubject, "tenant-a", "mcpguard-dev-cli", r.Resource, r.Scopes)
		if err != nil {
			tok = "(none: " + err.Error() + ")"
		}
		fmt.Fprintf(w, `
The authorization server at %s is the embedded DEVELOPMENT server: it
approves everyone as %q. Never expose it. A token to try with curl:
  %s
`, "http://"+cfg.DevAS, devSubject, tok)
	}
	fmt.Fprintln(w)
}
