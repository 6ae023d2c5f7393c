package proxy

import (
	"cmp"
	"context"
	"crypto"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/internal/stdiobridge"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/redisstore"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/dpop"
	"github.com/mcpguard/mcpguard/validate/introspect"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// Proxy is mcpguard's whole authorization decision in front of MCP
// servers reached over Streamable HTTP: for each route, the middleware of
// an [mcpguard.Guard] with a reverse proxy to the upstream as its next
// handler. It is an http.Handler serving the routes, their
// protected-resource metadata, the JWK Set of its assertions, /healthz
// and /readyz. Create it with [New]; stop it with [Proxy.Close].
type Proxy struct {
	cfg     Config
	mux     *http.ServeMux
	routes  []*route
	signer  *signer
	sources []*jwks.Source
	streams *streamSet
	tr      *http.Transport   // owned; nil with Config.Transport
	owned   []*http.Transport // the unix-socket upstreams' transports
	rdb     *redis.Client     // owned; nil without Config.Redis.Addr
	counter counter           // rate-limit counters
	log     *slog.Logger
	now     func() time.Time
}

// route is one Route, built.
type route struct {
	cfg      Route
	guard    *mcpguard.Guard
	handler  http.Handler
	identity identity
	fwd      *forwarder
	log      *slog.Logger
	upstream *url.URL
	unix     *unixUpstream       // nil: a TCP upstream
	bridge   *stdiobridge.Bridge // nil: not a stdio route
	limits   *limiter            // nil: no rate limit
	host     hostRule            // the DNS-rebinding check (host.go)
	// onDecision is the OnDecision hook Config.Instrument set, which the
	// route's middleware calls through hold; a no-op without one.
	onDecision func(context.Context, middleware.Decision)
}

// New checks cfg and builds the proxy: one key source per distinct
// issuer (keys fetched in the background), a Guard and a forwarder per
// route, the assertion signer. Errors wrap [ErrConfig] and name the
// field. On error nothing is left running.
func New(cfg Config) (*Proxy, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	px := &Proxy{cfg: cfg, mux: http.NewServeMux(), streams: newStreamSet(cfg.Timeouts.IdleStream, cfg.Timeouts.StreamWrite),
		log: cfg.Logger, now: cfg.Now}
	if px.now == nil {
		px.now = time.Now // cfg.Now stays nil: the packages below default it themselves
	}
	if err := px.build(); err != nil {
		_ = px.Close()
		return nil, err
	}
	return px, nil
}

// withDefaults returns c with its defaults filled in: its own copy of
// the routes, the timeouts, a discarding logger, the assertion issuer
// (the first route's origin) and JWK Set path.
func (c Config) withDefaults() Config {
	c.Routes = slices.Clone(c.Routes)
	c.Timeouts = c.Timeouts.withDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if a := &c.Assertion; a.Issuer == "" && len(c.Routes) > 0 {
		if u, err := url.Parse(c.Routes[0].Resource); err == nil && u.Host != "" {
			a.Issuer = u.Scheme + "://" + u.Host
		}
	}
	if c.Assertion.JWKSPath == "" {
		c.Assertion.JWKSPath = defaultJWKSPath
	}
	return c
}

// check refuses a configuration New cannot build, naming the field: the
// routes (each, and their paths), the issuers, TLS, the development
// authorization server and the assertion JWK Set path.
func (c *Config) check() error {
	if len(c.Routes) == 0 {
		return fmt.Errorf("%w: routes: at least one route is required", ErrConfig)
	}
	if err := c.Timeouts.check(); err != nil {
		return err
	}
	paths := map[string]int{}
	for i := range c.Routes {
		r := &c.Routes[i]
		if err := checkRoute(i, r); err != nil {
			return err
		}
		p := routePath(r)
		if j, dup := paths[p]; dup {
			return fmt.Errorf("%w: routes[%d].resource has the path %q of routes[%d]; give each route its own path", ErrConfig, i, p, j)
		}
		paths[p] = i
	}
	if err := checkIssuers(c); err != nil {
		return err
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		return fmt.Errorf("%w: tls: cert_file and key_file go together", ErrConfig)
	}
	if c.DevAS != "" && !loopbackHostPort(c.DevAS) {
		return fmt.Errorf("%w: dev_as %q: must be a loopback host:port (the development authorization server approves everyone)", ErrConfig, c.DevAS)
	}
	a := &c.Assertion
	if !strings.HasPrefix(a.JWKSPath, "/") {
		return fmt.Errorf("%w: assertion.jwks_path %q: must start with /", ErrConfig, a.JWKSPath)
	}
	if _, taken := paths[a.JWKSPath]; taken {
		return fmt.Errorf("%w: assertion.jwks_path %q is a route's path", ErrConfig, a.JWKSPath)
	}
	return nil
}

// routePath returns the path a route is served at: its resource's
// (checked by checkRoute), "/" for none.
func routePath(r *Route) string {
	u, _ := url.Parse(r.Resource)
	if p := u.EscapedPath(); p != "" {
		return p
	}
	return "/"
}

// build builds the checked configuration px.cfg: the assertion signer,
// the shared state, the upstream transport, the key sources and the
// routes, then the proxy's own endpoints.
func (px *Proxy) build() error {
	if err := px.buildSigner(); err != nil {
		return err
	}
	// Shared state: Redis when configured, else this process.
	px.counter = &memCounter{counts: map[string]memCount{}}
	if px.cfg.Redis.Addr != "" {
		if err := px.useRedis(); err != nil {
			return err
		}
	}
	if px.cfg.PinStore == nil {
		px.cfg.PinStore = middleware.NewMemoryPinStore() // one for every route: the route is the resource
	}
	rt := px.cfg.Transport
	if rt == nil {
		px.tr = newTransport(px.cfg.Timeouts)
		rt = px.tr
	}
	keys, err := px.keySources()
	if err != nil {
		return err
	}
	for i := range px.cfg.Routes {
		r, err := px.newRoute(i, &px.cfg.Routes[i], keys, rt)
		if err != nil {
			return err
		}
		px.routes = append(px.routes, r)
	}
	px.mux.HandleFunc("/healthz", health)
	px.mux.Handle("/readyz", http.HandlerFunc(px.ready))
	px.mux.HandleFunc("/", notFound)
	return nil
}

// buildSigner builds the assertion signer and serves its JWK Set, if a
// route uses assertions.
func (px *Proxy) buildSigner() error {
	needSigner := slices.ContainsFunc(px.cfg.Routes, func(r Route) bool {
		return !r.Stdio.enabled() && (r.Identity.Mode == "" || r.Identity.Mode == modeAssertion)
	})
	if !needSigner {
		return nil
	}
	a := &px.cfg.Assertion
	key := a.Key
	if key == nil && a.KeyFile != "" {
		k, err := loadKey("assertion.key_file", a.KeyFile)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		key = k
	}
	var publish []crypto.PublicKey
	for i, f := range a.PublishKeyFiles {
		k, err := loadPublicKey(fmt.Sprintf("assertion.publish_key_files[%d]", i), f)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		publish = append(publish, k)
	}
	s, err := newSigner(a.Issuer, key, publish)
	if err != nil {
		return err
	}
	px.signer = s
	px.mux.Handle(a.JWKSPath, s)
	return nil
}

// keySources returns one key source per issuer, shared by the routes
// that trust it.
func (px *Proxy) keySources() (map[string]validate.KeySource, error) {
	keys := map[string]validate.KeySource{}
	for _, r := range px.cfg.Routes {
		for _, iss := range r.Issuers {
			if keys[iss] != nil {
				continue
			}
			is := px.cfg.Issuers[iss]
			if is.OpaqueOnly {
				keys[iss] = &validate.StaticKeys{} // no JWT of it verifies; its tokens are introspected
				continue
			}
			src, err := jwks.New(px.jwksConfig(iss, is))
			if err != nil {
				return nil, fmt.Errorf("%w: issuers[%s]: %w", ErrConfig, iss, err)
			}
			px.sources = append(px.sources, src)
			keys[iss] = src
		}
	}
	return keys, nil
}

// jwksConfig is the jwks.Config of the issuer iss, configured as is.
func (px *Proxy) jwksConfig(iss string, is Issuer) jwks.Config {
	return jwks.Config{Issuer: iss, JWKSURL: is.JWKSURL, RefreshInterval: is.RefreshInterval,
		Observer: px.cfg.KeysObserver, Logger: px.log.With("component", "jwks"), Now: px.cfg.Now}
}

// newTransport is the transport to upstreams: no proxy from the
// environment, bounded dial, handshake, answer headers and header size,
// idle connections closed before common servers close them
// (upstreamIdleConn), no transparent decompression (bodies pass byte for
// byte).
func newTransport(t Timeouts) *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            (&net.Dialer{Timeout: t.Dial, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:    t.Dial,
		ResponseHeaderTimeout:  t.ResponseHeader,
		MaxResponseHeaderBytes: t.MaxResponseHeaderBytes,
		MaxIdleConns:           512,
		MaxIdleConnsPerHost:    128,
		IdleConnTimeout:        upstreamIdleConn,
		DisableCompression:     true,
		WriteBufferSize:        2 << 10, // requests are small; an idle stream holds the buffers
		ForceAttemptHTTP2:      true,
	}
}

// newRoute builds the route r (routes[i], checked), its identity, its
// Guard and its forwarder over rt, and mounts it and its metadata.
func (px *Proxy) newRoute(i int, r *Route, keys map[string]validate.KeySource, rt http.RoundTripper) (*route, error) {
	at := fmt.Sprintf("routes[%d]", i)
	x, rt := px.routeUpstream(r, rt)
	header := cmp.Or(http.CanonicalHeaderKey(r.Identity.Header), "Authorization")
	x.identity = px.routeIdentity(r, header, x.log)
	if r.Stdio.enabled() {
		// The child learns its user from its environment; its requests
		// never leave the process.
		x.identity = stdioIdentity{}
		b, err := stdiobridge.New(x.bridgeConfig())
		if err != nil {
			return nil, fmt.Errorf("%w: %s.stdio: %s", ErrConfig, at, strings.TrimPrefix(err.Error(), stdiobridge.ErrConfig.Error()+": "))
		}
		x.bridge = b
		rt = b.Transport()
	}
	gc, err := px.guardConfig(r, keys, x.log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	x.onDecision = func(context.Context, middleware.Decision) {}
	if h := gc.Middleware.OnDecision; h != nil {
		x.onDecision = h
		gc.Middleware.OnDecision = hold(h)
	}
	g, err := mcpguard.New(gc)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, at, err)
	}
	x.guard = g
	x.limits = newLimiter(r.RateLimit, px.counter, px.now)
	x.fwd = px.newForwarder(x, r, header, rt)
	routes := g.Routes(x.fwd)
	for j, rr := range routes {
		h := rr.Handler
		if j == len(routes)-1 { // the MCP endpoint
			x.handler = h
			h = x
		} else if len(px.cfg.Routes) > 1 && j > 0 {
			continue // the root well-known metadata: only for a single route
		}
		px.mux.Handle(rr.Pattern, h)
	}
	return x, nil
}

// routeUpstream returns the route r with its upstream (a stdio or unix
// socket one resolved) and the transport to reach it: rt, or for a unix
// socket without Config.Transport, the socket's own (owned by px).
func (px *Proxy) routeUpstream(r *Route, rt http.RoundTripper) (*route, http.RoundTripper) {
	up, _ := url.Parse(r.Upstream)
	if r.Stdio.enabled() {
		up = stdioTarget
	}
	res, _ := url.Parse(r.Resource) // checked by checkRoute
	x := &route{cfg: *r, log: px.log.With("route", r.Resource), upstream: up, host: newHostRule(res)}
	if up.Scheme == "unix" {
		x.unix, _ = parseUnixUpstream(up) // checked by checkRoute
		if px.cfg.Transport == nil {
			tr := x.unix.transport(px.cfg.Timeouts)
			px.owned = append(px.owned, tr)
			rt = tr
		}
	}
	return x, rt
}

// target returns the URL requests to the upstream are sent to.
func (x *route) target() *url.URL {
	if x.unix != nil {
		return x.unix.target
	}
	return x.upstream
}

// routeIdentity returns how the route r (logging to rl) tells its
// upstream who the user is, in the request header named header
// (canonical).
func (px *Proxy) routeIdentity(r *Route, header string, rl *slog.Logger) identity {
	audience := cmp.Or(r.Identity.Audience, r.Upstream)
	bearer := header == "Authorization"
	switch r.Identity.Mode {
	case modeHeaders:
		rl.Warn("proxy: identity mode headers: the upstream trusts plain X-Mcpguard-* headers; keep it reachable by the proxy only", "upstream", r.Upstream)
		return headersIdentity{}
	case modeExchange:
		hc := fetch.NewClient(fetch.ClientConfig{Timeout: exchangeTimeout})
		return &exchangeIdentity{cfg: r.Identity.Exchange, audience: audience, resource: r.Upstream, header: header, bearer: bearer,
			client: hc, now: px.now, cache: map[string]cachedToken{}, endpoints: newTokenEndpoints(hc, px.now)}
	}
	prefix := ""
	if bearer {
		prefix = "Bearer "
	}
	ttl := cmp.Or(r.Identity.TTL, defaultAssertionTTL)
	return &assertionIdentity{a: newAssertions(px.signer, audience, ttl, px.now, prefix), header: header, bearer: bearer}
}

// guardConfig returns the mcpguard.Config of the route r: its issuers'
// key sources, its policy, validation, DPoP, sessions and stores, its
// introspection, then Config.Instrument.
func (px *Proxy) guardConfig(r *Route, keys map[string]validate.KeySource, rl *slog.Logger) (mcpguard.Config, error) {
	dp, _ := dpopPolicy(r.DPoP)
	proof := dpop.Config{
		ReplayStore: px.cfg.ReplayStore, Window: r.DPoPProof.Window, ReplayMargin: r.DPoPProof.ReplayMargin,
		NonceSecret: r.DPoPProof.NonceSecret, NonceLifetime: r.DPoPProof.NonceLifetime,
	}
	for _, a := range r.DPoPProof.Algorithms {
		proof.Algorithms = append(proof.Algorithms, jose.SignatureAlgorithm(a))
	}
	ks := map[string]validate.KeySource{}
	for _, iss := range r.Issuers {
		ks[iss] = keys[iss]
	}
	gc := mcpguard.Config{
		Resource:   r.Resource,
		Issuers:    slices.Clone(r.Issuers),
		Keys:       ks,
		Scopes:     slices.Clone(r.Scopes),
		Operations: r.Operations.policy(),
		Validate:   r.validateConfig(px.cfg.Now),
		Middleware: middleware.Config{
			AllowedOrigins: slices.Clone(r.AllowedOrigins),
			DPoP:           middleware.DPoPConfig{Policy: dp, Proof: proof},
			ScopeImplies:   r.ScopeImplies,
			StepUpLimit:    r.StepUp.Limit,
			StepUpWindow:   r.StepUp.Window,
			StepUpStore:    px.cfg.StepUpStore,
			MaxBodyBytes:   r.MaxBodyBytes,
			Lists:          listMode(r.Lists),
			Rules:          r.Policy.rules(),
			TenantArgument: r.Policy.TenantArgument,
			Pins:           middleware.ToolPins{On: r.Pins.Tools, Store: px.cfg.PinStore, Accepted: r.Pins.Accepted},
			Sessions: middleware.SessionConfig{
				Max: r.Sessions.Max, PerPrincipal: r.Sessions.PerPrincipal, IdleTimeout: r.Sessions.IdleTimeout, BindClient: r.Sessions.BindClient,
				Store: px.cfg.OwnerStore,
			},
			// The proxy logs every decision itself (log.go); the
			// middleware's own log keeps its warnings only.
			Logger: slog.New(minLevel{rl.Handler(), slog.LevelWarn}),
			Now:    px.cfg.Now,
		},
		Metadata: prm.Metadata{ResourceName: r.ResourceName, BearerMethodsSupported: []string{"header"}},
		Logger:   rl,
	}
	tv, err := px.introspection(r, dp != middleware.DPoPOff)
	if err != nil {
		return gc, err
	}
	gc.TokenValidator = tv
	if px.cfg.Instrument != nil {
		px.cfg.Instrument(&gc)
	}
	return gc, nil
}

// newForwarder returns the forwarder of the route x (r built) over rt,
// removing header, the identity's, from what the client sends.
func (px *Proxy) newForwarder(x *route, r *Route, header string, rt http.RoundTripper) *forwarder {
	f := &forwarder{rt: x, target: x.target(), write: px.cfg.Timeouts.StreamWrite, streams: px.streams,
		users: newUserStreams(cmp.Or(r.MaxStreamsPerUser, defaultStreamsPerUser))}
	f.strip, f.prefixes = stripLists(px.cfg.StripHeaders, header)
	f.allow = allowList(r.ForwardHeaders)
	f.rp = &httputil.ReverseProxy{
		Rewrite:        f.rewrite,
		Transport:      no1xx{rt},
		FlushInterval:  -1, // every SSE event as it arrives
		ModifyResponse: f.modifyResponse,
		ErrorHandler:   f.errorHandler,
		BufferPool:     bufferPool{},
		ErrorLog:       log.New(discard{}, "", 0),
	}
	return f
}

// ServeHTTP marks the request as the route's, refuses a foreign Host on
// a loopback listener (host.go) with 403 before anything reads the
// request, then runs the middleware. Either way the request's decision
// event is delivered by the time it returns.
func (x *route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := stateFrom(r.Context())
	if st != nil {
		st.route = x
	}
	if !x.host.allows(r) {
		// Decided before the token and the body: the event has the
		// request's revision and session header, nothing else known.
		if st != nil {
			st.proxyErr, st.released = "host_not_allowed", true
		}
		x.guard.Middleware().Report(r, middleware.Decision{Status: http.StatusForbidden, Reason: "host_not_allowed", Err: errHostNotAllowed})
		refuseHost(w, r)
		return
	}
	x.handler.ServeHTTP(w, r)
	if st != nil {
		x.release(r.Context(), st) // a pass the forwarder did not release
	}
}

// stripLists returns the canonical header names and prefixes the
// forwarder removes: the fixed lists, the configured ones and the
// identity header.
func stripLists(extra []string, idHeader string) (exact, prefixes []string) {
	exact = slices.Clone(alwaysStripped)
	prefixes = slices.Clone(strippedPrefixes)
	for _, h := range extra {
		if p, ok := strings.CutSuffix(h, "*"); ok {
			prefixes = append(prefixes, http.CanonicalHeaderKey(p))
			continue
		}
		exact = append(exact, http.CanonicalHeaderKey(h))
	}
	if !slices.Contains(exact, idHeader) {
		exact = append(exact, idHeader)
	}
	return exact, prefixes
}

// ServeHTTP serves the routes, their metadata, the JWK Set, /healthz and
// /readyz, and logs one line per MCP request. A request whose head is
// larger than 64 KiB (the request line and header lines, each with
// its CRLF) gets 431.
func (px *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if headBytes(r) > maxRequestHeaderBytes {
		headerTooLarge(w)
		return
	}
	sc := &stateCtx{Context: r.Context()}
	sc.s.start = px.now()
	// The route's middleware records its decision in the state, where the
	// forwarder and the log line read it.
	r2 := r.WithContext(middleware.ContextWithDecision(sc, &sc.s.decision))
	px.mux.ServeHTTP(w, r2)
	if sc.s.route != nil {
		px.logRequest(r2, &sc.s)
	}
}

// EndGetStreams ends the SSE streams of GET requests, which never end by
// themselves, cleanly: the client sees a complete answer and resumes with
// Last-Event-ID. Streams opened after it end at once. Call it when
// shutting down, before http.Server.Shutdown's drain.
func (px *Proxy) EndGetStreams() { px.streams.endStreams(false) }

// EndAnswers ends every open upstream answer cleanly, as EndGetStreams
// does the GET streams. Call it when shutting down, once the drain has
// waited long enough for answers to finish by themselves.
func (px *Proxy) EndAnswers() { px.streams.endStreams(true) }

// OpenAnswers returns the number of upstream answers being forwarded
// (open SSE streams included): a proxy replaced by a reload can be closed
// for good once it is 0.
func (px *Proxy) OpenAnswers() int { return px.streams.count() }

// Close stops the key sources and closes idle upstream connections. It
// is idempotent.
func (px *Proxy) Close() error {
	var errs []error
	for _, r := range px.routes {
		errs = append(errs, r.guard.Close())
		if r.bridge != nil {
			errs = append(errs, r.bridge.Close()) // every child stopped and reaped
		}
	}
	for _, s := range px.sources {
		errs = append(errs, s.Close())
	}
	px.sources = nil
	if px.tr != nil {
		px.tr.CloseIdleConnections()
	}
	for _, tr := range px.owned {
		tr.CloseIdleConnections()
	}
	if px.rdb != nil {
		errs = append(errs, px.rdb.Close())
		px.rdb = nil
	}
	return errors.Join(errs...)
}

// WaitReady waits until every issuer's first key set is loaded, or ctx
// ends (mcpguard ErrNotReady, naming each issuer and the cause).
func (px *Proxy) WaitReady(ctx context.Context) error {
	var errs []error
	for _, r := range px.routes {
		if err := r.guard.WaitReady(ctx); err != nil {
			errs = append(errs, fmt.Errorf("route %s: %w", r.cfg.Resource, err))
		}
	}
	return errors.Join(errs...)
}

// JWKSPath returns the path of the proxy's JWK Set, the public keys an
// upstream verifies the assertions with, or "" when no route uses
// assertions.
func (px *Proxy) JWKSPath() string {
	if px.signer == nil {
		return ""
	}
	return px.cfg.Assertion.JWKSPath
}

// AssertionIssuer returns the iss of the proxy's assertions (defaults
// applied), which an upstream trusts.
func (px *Proxy) AssertionIssuer() string { return px.cfg.Assertion.Issuer }

func health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}

func notFound(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"error":"not_found"}` + "\n"))
}

// readyDial bounds the upstream reachability check of /readyz.
const readyDial = time.Second

// ready answers 200 when every route's issuers have keys and every
// upstream accepts a connection (TCP or its unix socket), else 503; the body names which,
// with no error text.
func (px *Proxy) ready(w http.ResponseWriter, r *http.Request) {
	type routeState struct {
		Resource  string `json:"resource"`
		Keys      bool   `json:"keys_loaded"`
		Reachable bool   `json:"upstream_reachable"`
	}
	out := make([]routeState, len(px.routes))
	var wg sync.WaitGroup
	for i, x := range px.routes {
		out[i] = routeState{Resource: x.cfg.Resource, Keys: true}
		for _, h := range x.guard.Health() {
			out[i].Keys = out[i].Keys && h.Ready
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(r.Context(), readyDial)
			defer cancel()
			if x.unix != nil {
				out[i].Reachable = x.unix.dial(ctx, readyDial) == nil
				return
			}
			if x.bridge != nil {
				out[i].Reachable = true // children start per session
				return
			}
			host := x.upstream.Host
			if x.upstream.Port() == "" {
				port := "80"
				if x.upstream.Scheme == "https" {
					port = "443"
				}
				host = net.JoinHostPort(x.upstream.Hostname(), port)
			}
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
			if err == nil {
				_ = c.Close()
				out[i].Reachable = true
			}
		}()
	}
	wg.Wait()
	status, word := http.StatusOK, "ready"
	for _, s := range out {
		if !s.Keys || !s.Reachable {
			status, word = http.StatusServiceUnavailable, "not_ready"
		}
	}
	writeJSON(w, status, struct {
		Status string       `json:"status"`
		Routes []routeState `json:"routes"`
	}{word, out})
}

// useRedis connects to Config.Redis and puts the shared state there: the
// step-up counters, DPoP replay, session owners, pinned tools and
// rate-limit counters
// (each unless the Go caller gave its own store).
func (px *Proxy) useRedis() error {
	rc := px.cfg.Redis
	opt := &redis.Options{Addr: rc.Addr, Username: rc.Username, Password: rc.Password, DB: rc.DB}
	if rc.TLS {
		opt.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	px.rdb = redis.NewClient(opt)
	sc := redisstore.Config{Client: px.rdb, Prefix: rc.Prefix}
	if px.cfg.StepUpStore == nil {
		s, err := redisstore.NewStepUpStore(sc)
		if err != nil {
			return fmt.Errorf("%w: redis: %w", ErrConfig, err)
		}
		px.cfg.StepUpStore = s
	}
	if px.cfg.ReplayStore == nil {
		s, err := redisstore.NewReplayStore(sc)
		if err != nil {
			return fmt.Errorf("%w: redis: %w", ErrConfig, err)
		}
		px.cfg.ReplayStore = s
	}
	if px.cfg.OwnerStore == nil {
		s, err := redisstore.NewOwnerStore(sc)
		if err != nil {
			return fmt.Errorf("%w: redis: %w", ErrConfig, err)
		}
		px.cfg.OwnerStore = s
	}
	if px.cfg.PinStore == nil {
		s, err := redisstore.NewPinStore(sc)
		if err != nil {
			return fmt.Errorf("%w: redis: %w", ErrConfig, err)
		}
		px.cfg.PinStore = s
	}
	prefix := rc.Prefix
	if prefix == "" {
		prefix = "mcpguard:" // redisstore.Config.Prefix's default, so that the counters share its namespace
	}
	px.counter = &redisCounter{rdb: px.rdb, prefix: prefix}
	return nil
}

// introspection returns the TokenValidator hook of a route whose issuer
// has introspection (a hybrid: the route's JWTs locally, other tokens
// introspected), or nil.
func (px *Proxy) introspection(r *Route, dpopOn bool) (func(*validate.Validator) (middleware.TokenValidator, error), error) {
	var iss string
	var in Introspection
	for _, i := range r.Issuers {
		if is, ok := px.cfg.Issuers[i]; ok && is.Introspection.enabled() {
			iss, in = i, is.Introspection
		}
	}
	if iss == "" {
		return nil, nil
	}
	ic, err := px.introspectConfig(r, iss, in, dpopOn)
	if err != nil {
		return nil, err
	}
	intro, err := introspect.New(ic)
	if err != nil {
		return nil, fmt.Errorf("%w: issuers[%s].introspection: %w", ErrConfig, iss, err)
	}
	return func(jwt *validate.Validator) (middleware.TokenValidator, error) {
		return introspect.NewHybrid(jwt, intro)
	}, nil
}

// introspectConfig is the introspect.Config of the route r for the
// issuer iss, whose introspection is in; dpopOn: the route takes DPoP.
func (px *Proxy) introspectConfig(r *Route, iss string, in Introspection, dpopOn bool) (introspect.Config, error) {
	at := fmt.Sprintf("issuers[%s].introspection", iss)
	m, _ := authMethod(in.AuthMethod)
	key := in.PrivateKey
	if key == nil && in.PrivateKeyFile != "" {
		k, err := loadKey(at+".private_key_file", in.PrivateKeyFile)
		if err != nil {
			return introspect.Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		key = k
	}
	audiences := []string{r.Resource}
	audiences = append(audiences, r.Validation.Audiences...)
	ic := introspect.Config{
		Issuer: iss, Endpoint: in.Endpoint, Audiences: audiences,
		AllowMissingAudience: in.AllowMissingAudience, AllowMissingSubject: in.AllowMissingSubject,
		AllowConfirmation: dpopOn, // DPoP-bound tokens carry cnf; the middleware checks the binding
		ClientID:          in.ClientID, ClientSecret: in.ClientSecret, AuthMethod: m, PrivateKey: key, KeyID: in.KeyID,
		Timeout: in.Timeout, CacheSize: in.CacheSize, MaxCacheTTL: in.MaxCacheTTL, InactiveCacheTTL: in.InactiveCacheTTL,
		MaxTokenBytes: r.Validation.MaxTokenBytes, Leeway: r.Validation.Leeway, TenantClaim: r.Validation.TenantClaim,
		Observer: px.cfg.IntrospectionObserver, Now: px.cfg.Now, Logger: px.log.With("component", "introspect", "issuer", iss),
	}
	return ic, nil
}

// listMode parses Route.Lists (checked by checkRoute).
func listMode(s string) middleware.ListMode {
	var m middleware.ListMode
	if s != "" {
		_ = m.UnmarshalText([]byte(s))
	}
	return m
}
