package proxy

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpguard/mcpguard/middleware"
)

// protocolHeaders are the request headers forwarded to the upstream
// besides the route's forward_headers and the identity the proxy sets: the
// Streamable HTTP transport's own (2025-11-25 and 2026-07-28), each of which
// the middleware read or checked. Every other header a client sends is
// dropped (docs/proxy.md, "What the upstream receives").
var protocolHeaders = []string{"Accept", "Content-Type", "Last-Event-Id", "Mcp-Method", "Mcp-Name", "Mcp-Protocol-Version", "Mcp-Session-Id"}

// protocolPrefix starts the other request headers of the protocol: the
// 2026-07-28 transport's Mcp-Param-{Name} headers (x-mcp-header tool
// arguments), which the server checks against its tools' schemas.
const protocolPrefix = "Mcp-Param-"

// alwaysStripped are request headers never forwarded, even when a route
// names them in forward_headers (refused at load, checkForwardHeaders):
// the client's credentials, cookies, the browser headers the proxy
// already checked (an upstream's own cross-origin check would refuse
// them, since its Host differs), forwarding headers a client may forge,
// and identity headers of other gateways, which an upstream might trust.
var alwaysStripped = []string{
	"Authorization", "Proxy-Authorization", "Dpop", "Cookie", "Cookie2",
	"Origin", "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-Fetch-User",
	"Forwarded", "X-Real-Ip", "X-Client-Ip", "True-Client-Ip", "Cf-Connecting-Ip",
	"Remote-User", "X-Remote-User", "X-User", "X-User-Id", "X-Email", "X-Groups",
	"Upgrade", // MCP needs no protocol switch; ReverseProxy would honour one
	// Overrides of the method and path some frameworks honour (Express's
	// method-override, IIS, old Symfony): the upstream would route
	// elsewhere than the request the proxy authorized.
	"X-Http-Method-Override", "X-Http-Method", "X-Method-Override", "X-Original-Url", "X-Rewrite-Url",
	// The message framing and connection, which are the proxy's own.
	"Host", "Connection", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Content-Length", "Accept-Encoding",
}

// decidedHeaders are the request headers the middleware's decision
// read, forwarded even when the client's Connection header names them.
var decidedHeaders = []string{"Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Last-Event-Id", "Content-Type", "Accept"}

// strippedPrefixes are header name prefixes never forwarded, even when a
// route names such a header in forward_headers (refused at load).
var strippedPrefixes = []string{
	"X-Forwarded-", "X-Mcpguard-", "X-Auth-Request-", "X-Pomerium-", "X-Mcp-User", "X-Ms-Client-Principal",
	"X-Goog-Authenticated-", "X-Amzn-Oidc-", "Impersonate-",
}

// identityHeaders are the headers of the headers mode.
const (
	headerSubject   = "X-Mcpguard-Subject"
	headerIssuer    = "X-Mcpguard-Issuer"
	headerClientID  = "X-Mcpguard-Client-Id"
	headerTenant    = "X-Mcpguard-Tenant"
	headerScopes    = "X-Mcpguard-Scopes"
	headerPrincipal = "X-Mcpguard-Principal"
)

// reqState is the per-request state the proxy's handlers share through
// the request context: allocated once per request by Proxy.ServeHTTP.
type reqState struct {
	route *route
	start time.Time
	// decision is what the route's middleware decided, recorded by it
	// (middleware.ContextWithDecision, Proxy.ServeHTTP): its Reason is
	// empty until then. The forwarder reads the principal, the operation
	// and the JSON-RPC id there; the log line reads it after the request.
	decision middleware.Decision
	// identity header to set upstream (name and value), or none.
	idName, idValue string
	idHeaders       bool // the headers mode: set the X-Mcpguard-* headers
	upstreamStatus  int
	proxyErr        string                   // the class of a proxy error answer, for the log
	errStatus       int                      // the status of the forwarder's error answer (errorHandler)
	rc              *http.ResponseController // the client's, for per-write deadlines
	// held: the middleware's decision to pass the request is held back
	// from the route's OnDecision hook until the forwarder's own checks
	// are done (route.release); released: they are, later decisions go
	// to the hook at once.
	held, released bool
}

type stateKey struct{}

func stateFrom(ctx context.Context) *reqState {
	s, _ := ctx.Value(stateKey{}).(*reqState)
	return s
}

// stateCtx carries a reqState without a separate allocation.
type stateCtx struct {
	context.Context
	s reqState
}

func (c *stateCtx) Value(key any) any {
	if _, ok := key.(stateKey); ok {
		return &c.s
	}
	return c.Context.Value(key)
}

// forwarder is the next handler of a route's middleware: it sets the
// upstream identity and forwards with a ReverseProxy.
type forwarder struct {
	rt       *route
	target   *url.URL
	rp       *httputil.ReverseProxy
	allow    map[string]bool // canonical: protocolHeaders and the route's forward_headers
	strip    []string        // exact, canonical
	prefixes []string        // canonical prefixes
	write    time.Duration
	streams  *streamSet
	users    *userStreams // the open SSE streams of each user
}

func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := stateFrom(r.Context())
	if st == nil || st.decision.Principal == nil {
		writeError(w, nil, http.StatusInternalServerError)
		return
	}
	d := &st.decision
	p := d.Principal
	if !p.Anonymous {
		// The middleware read the whole body already; net/http would
		// cancel a long handler's context when the server's read deadline
		// passes. Writes are bounded one by one (streamBody).
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Now().Add(f.write))
		st.rc = rc
	}
	if l := f.rt.limits; l != nil && !p.Anonymous {
		tool := ""
		if d.Method == "tools/call" {
			tool = d.Name
		}
		ra, err := l.allow(r.Context(), f.rt.cfg.Resource, p.UserID(), tool)
		switch {
		case errors.Is(err, errRateLimited):
			f.rt.refuse(r, st, http.StatusTooManyRequests, "rate_limited", err)
			w.Header().Set("Retry-After", strconv.Itoa(int((ra+time.Second-1)/time.Second)))
			writeError(w, d.ID, http.StatusTooManyRequests)
			return
		case err != nil:
			f.rt.log.Warn("proxy: rate-limit counters unavailable", "fail_closed", l.failClosed, "error", err.Error())
			if l.failClosed {
				f.rt.refuse(r, st, http.StatusServiceUnavailable, "rate_limit_unavailable", err)
				w.Header().Set("Retry-After", "1")
				writeError(w, d.ID, http.StatusServiceUnavailable)
				return
			}
		}
	}
	if err := f.rt.identity.set(r.Context(), st, p, r); err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, errIdentityUnavailable) {
			status = http.StatusServiceUnavailable
		}
		f.rt.log.Warn("proxy: upstream identity failed", "route", f.rt.cfg.Resource, "error", err.Error())
		f.rt.refuse(r, st, status, "identity", err)
		writeError(w, d.ID, status)
		return
	}
	f.rt.release(r.Context(), st)
	f.rp.ServeHTTP(w, r)
}

// refuse makes the proxy's refusal of r (status, reason, the internal
// cause err) its decision, in place of the middleware's decision to pass
// it (held): the same request fields (principal, session, operation,
// revision, arguments' digest, id), the proxy's status and reason,
// delivered through the middleware's one path (middleware.Report), so
// that the log line and the OnDecision hook carry it. st.proxyErr is
// the reason too (the log line's level).
func (x *route) refuse(r *http.Request, st *reqState, status int, reason string, err error) {
	st.proxyErr = reason
	d := st.decision
	d.Status, d.Reason, d.Err = status, middleware.Reason(reason), err
	d.RequiredScopes, d.MissingScopes = nil, nil
	st.held, st.released = false, true
	x.guard.Middleware().Report(r, d)
}

// release ends the hold of st's decision: a pass held from the route's
// OnDecision hook (hold) goes to it now, and later decisions go at once.
func (x *route) release(ctx context.Context, st *reqState) {
	st.released = true
	if st.held {
		st.held = false
		x.onDecision(ctx, st.decision)
	}
}

// hold is the route's Config.OnDecision around the hook Config.Instrument
// set (next): a decision to pass a request the proxy serves is held until
// the forwarder's own checks are done (release), so that a request the
// proxy then refuses yields one event, the refusal (refuse).
func hold(next func(context.Context, middleware.Decision)) func(context.Context, middleware.Decision) {
	return func(ctx context.Context, d middleware.Decision) {
		if st := stateFrom(ctx); st != nil && d.Status == 0 && !st.released {
			st.held = true // the decision itself is in st.decision (ContextWithDecision)
			return
		}
		next(ctx, d)
	}
}

// refuseUnread answers status with the proxy's JSON-RPC error, closing
// the connection when the request's body may be left unread (as the
// middleware's refusals before the body do), so that a client cannot hold
// it by trickling the body.
func refuseUnread(w http.ResponseWriter, r *http.Request, status int) {
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		if r.ProtoMajor < 2 {
			w.Header().Set("Connection", "close")
		}
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	writeError(w, nil, status)
}

// rewrite builds the upstream request: exactly the upstream URL (with the
// client's query), its own Host, no client credential or identity header,
// and the route's identity.
func (f *forwarder) rewrite(pr *httputil.ProxyRequest) {
	out := pr.Out
	out.URL.Scheme = f.target.Scheme
	out.URL.Host = f.target.Host
	out.URL.Path = f.target.Path
	out.URL.RawPath = f.target.RawPath
	out.URL.RawQuery = pr.In.URL.RawQuery
	out.Host = ""
	h := out.Header
	for k := range h {
		if !f.forwards(k) {
			delete(h, k)
		}
	}
	if len(pr.In.Header["Connection"]) > 0 {
		// ReverseProxy removed the headers the client's Connection header
		// names; those the middleware decided on go upstream anyway, as
		// they were authorized (an initialize whose bound Mcp-Session-Id
		// was named there reached the upstream without it and created a
		// session the binding never saw, past sessions.per_principal).
		for _, k := range decidedHeaders {
			if v, ok := pr.In.Header[k]; ok {
				h[k] = v
			}
		}
	}
	// Answers are read (lists, tasks, sessions): ask for them
	// uncompressed, for every request, since whether an answer must be
	// read is not always known before it arrives (a stream carries
	// notifications of tasks). The transport adds no encoding of its own.
	delete(h, "Accept-Encoding")
	st := stateFrom(pr.In.Context())
	if st == nil {
		return
	}
	if st.idName != "" {
		h[st.idName] = []string{st.idValue}
	}
	if p := st.decision.Principal; st.idHeaders && p != nil && !p.Anonymous {
		h[headerSubject] = []string{p.Subject}
		h[headerIssuer] = []string{p.Issuer}
		h[headerClientID] = []string{p.ClientID}
		h[headerScopes] = []string{strings.Join(p.Scopes, " ")}
		h[headerPrincipal] = []string{p.ID()}
		if p.Tenant != "" {
			h[headerTenant] = []string{p.Tenant}
		}
	}
}

// forwards reports whether the request header k (canonical, as net/http
// parsed it) goes upstream: it must be allowed (the protocol's own or the
// route's forward_headers) and none of the stripped ones. A name with "_"
// is dropped, as nginx does by default: CGI-style servers (WSGI, Rack,
// Django) fold "_" and "-" into one name, so X_Mcpguard_Subject or
// Mcp_Session_Id would be an unchecked copy of a header the proxy strips,
// sets or binds.
func (f *forwarder) forwards(k string) bool {
	if strings.IndexByte(k, '_') >= 0 || !f.allow[k] && !strings.HasPrefix(k, protocolPrefix) {
		return false
	}
	if slices.Contains(f.strip, k) {
		return false
	}
	for _, p := range f.prefixes {
		if strings.HasPrefix(k, p) {
			return false
		}
	}
	return true
}

// errUpstreamStatus is an upstream answer the proxy does not pass on.
type errUpstreamStatus struct {
	status     int
	retryAfter string
}

func (e *errUpstreamStatus) Error() string { return "upstream answered " + strconv.Itoa(e.status) }

// modifyResponse hides upstream failures and the upstream's own
// authorization conversation, and bounds the answer's body in time.
func (f *forwarder) modifyResponse(resp *http.Response) error {
	st := stateFrom(resp.Request.Context())
	if st != nil {
		st.upstreamStatus = resp.StatusCode
	}
	switch {
	case resp.StatusCode >= 500:
		e := &errUpstreamStatus{status: resp.StatusCode}
		if resp.StatusCode == http.StatusServiceUnavailable {
			if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n >= 0 && n <= 3600 {
				e.retryAfter = strconv.Itoa(n)
			}
		}
		return e
	case resp.StatusCode == http.StatusSwitchingProtocols:
		// The proxy never asks for one (Upgrade is stripped), so
		// ReverseProxy refuses it after this, but without closing its
		// body: wrapped, it would stay open and counted forever.
		return &errUpstreamStatus{status: resp.StatusCode}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		// Streamable HTTP has no redirects. Passed on, one would send the
		// client to the upstream's own address (its Location, named after
		// the Host the proxy sent), where some clients resend their token
		// (Go's http.Client keeps Authorization for the same host name).
		return &errUpstreamStatus{status: resp.StatusCode}
	case resp.StatusCode == http.StatusUnauthorized:
		// The upstream refused the proxy's identity: a misconfiguration
		// (audience, JWKS URL, clock) the client cannot fix.
		return &errUpstreamStatus{status: resp.StatusCode}
	}
	// The proxy owns the authorization conversation: an upstream
	// challenge names the upstream's URL and metadata, not the resource;
	// DPoP nonces are the proxy's. Cookies never reach the upstream, so
	// its own are of no use to a client.
	resp.Header.Del("Www-Authenticate")
	resp.Header.Del("Dpop-Nonce")
	resp.Header.Del("Set-Cookie")
	// Nor trailers: ReverseProxy copies them into the answer's header map
	// after the body, past these filters, and a writer that holds the
	// header until the body is read (a list being rewritten) sends them
	// as headers. streamBody.Close drops those that arrive.
	resp.Trailer = nil
	// And CORS: the middleware answers allowed origins itself; an
	// upstream's own (often "*") would widen or duplicate it.
	for k := range resp.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			delete(resp.Header, k)
		}
	}
	var rc *http.ResponseController
	if st != nil {
		rc = st.rc
	}
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	var release func()
	if sse && st != nil && !st.decision.Principal.Anonymous {
		// The one point that sees every stream, GET or POST answer; the
		// slot is given back when the body is closed, on every end
		// (client gone, upstream end, idle_stream, shutdown).
		user := st.decision.Principal.UserID()
		if !f.users.acquire(user) {
			return errUserStreams
		}
		release = func() { f.users.release(user) }
	}
	resp.Body = f.streams.wrap(resp, rc, sse, resp.Request.Method == http.MethodGet)
	resp.Body.(*streamBody).release = release
	return nil
}

// no1xx is the upstream transport as ReverseProxy uses it, without
// ReverseProxy's Got1xxResponse hook: an upstream's 1xx answers (103
// Early Hints) are read and dropped by the transport, within
// timeouts.max_response_header_bytes for all of them and the final
// answer's header. Forwarded, as ReverseProxy does, a 1xx carries every
// header of the upstream past modifyResponse, clears the headers the
// middleware set for the answer (CORS), and is taken by the session
// binding for the answer, so that the session of the answer after it is
// never bound (and with the hook, the transport bounds neither their
// number nor their size in sum).
type no1xx struct{ rt http.RoundTripper }

func (t no1xx) RoundTrip(r *http.Request) (*http.Response, error) {
	if tr := httptrace.ContextClientTrace(r.Context()); tr != nil && tr.Got1xxResponse != nil {
		c := *tr
		c.Got1xxResponse = nil
		r = r.WithContext(&traceCtx{Context: r.Context(), trace: &c})
	}
	return t.rt.RoundTrip(r)
}

// traceCtx answers the client trace of its context with trace.
type traceCtx struct {
	context.Context
	trace *httptrace.ClientTrace
}

func (c *traceCtx) Value(key any) any {
	v := c.Context.Value(key)
	if _, ok := v.(*httptrace.ClientTrace); ok {
		return c.trace
	}
	return v
}

// errorHandler answers a failed forward with a JSON-RPC-shaped error and
// no upstream detail.
func (f *forwarder) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	st := stateFrom(r.Context())
	var id []byte
	if st != nil {
		id = st.decision.ID
	}
	if r.Context().Err() != nil {
		if st != nil {
			st.proxyErr = "client_gone"
		}
		return // the client left; nobody reads an answer
	}
	status, class := http.StatusBadGateway, "upstream_unreachable"
	var ue *errUpstreamStatus
	var ne net.Error
	switch {
	case errors.As(err, &ue):
		class = "upstream_status_" + strconv.Itoa(ue.status)
		if ue.status == http.StatusServiceUnavailable {
			status = http.StatusServiceUnavailable
			if ue.retryAfter != "" {
				w.Header().Set("Retry-After", ue.retryAfter)
			}
		}
	case errors.Is(err, errUserStreams):
		status, class = http.StatusTooManyRequests, "user_streams"
		w.Header().Set("Retry-After", userStreamsRetryAfter)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		status, class = http.StatusGatewayTimeout, "upstream_timeout"
	}
	if st != nil {
		st.proxyErr, st.errStatus = class, status
	}
	if class == "user_streams" {
		f.rt.log.Info("proxy: stream refused, the user holds the route's maximum", "route", f.rt.cfg.Resource)
	} else {
		f.rt.log.Warn("proxy: upstream failed", "route", f.rt.cfg.Resource, "class", class, "error", err.Error())
	}
	writeError(w, id, status)
}

// streamSet tracks the open upstream answers, to end them at shutdown.
type streamSet struct {
	idle, write time.Duration // the timeouts IdleStream and StreamWrite
	base        time.Time     // the answers' clock readings are relative to it (monotonic)

	mu      sync.Mutex
	open    map[*streamBody]struct{}
	closing bool
}

func newStreamSet(idle, write time.Duration) *streamSet {
	return &streamSet{idle: idle, write: write, base: time.Now(), open: map[*streamBody]struct{}{}}
}

// wrap returns body bounded by the idle timeout (a read waiting longer
// ends it cleanly) with each read extending the client write deadline.
func (s *streamSet) wrap(resp *http.Response, rc *http.ResponseController, sse, get bool) io.ReadCloser {
	b := &streamBody{rc: resp.Body, resp: resp, set: s, w: rc, sse: sse, get: get, deadline: math.MinInt64 / 2}
	b.last.Store(int64(time.Since(s.base)))
	b.timer = time.AfterFunc(s.idle, b.idleCheck)
	s.mu.Lock()
	closing := s.closing
	if !closing {
		s.open[b] = struct{}{}
	}
	s.mu.Unlock()
	if closing && sse {
		b.end()
	}
	return b
}

// endStreams ends the open answers: SSE streams of GET requests at once,
// and with all, every answer.
func (s *streamSet) endStreams(all bool) {
	s.mu.Lock()
	s.closing = true
	var ends []*streamBody
	for b := range s.open {
		if all || (b.sse && b.get) {
			ends = append(ends, b)
		}
	}
	s.mu.Unlock()
	for _, b := range ends {
		b.end()
	}
}

// count returns the number of open answers.
func (s *streamSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// streamBody is an upstream answer's body, ended cleanly (io.EOF) when
// idle too long or at shutdown, so that the client sees a complete HTTP
// answer and resumes the stream (Last-Event-ID).
//
// A Read costs one clock reading: the idle timer is not reset on every
// read but checks, when it fires, when the last byte came (and waits for
// the rest); the client's write deadline is moved to the read's time plus
// write only once 1/16 of write has passed since it was last set, so a
// write after a read gets between 15/16 of write and all of it.
type streamBody struct {
	rc    io.ReadCloser
	resp  *http.Response // its trailers are dropped at Close
	set   *streamSet
	timer *time.Timer
	w     *http.ResponseController

	// Clock readings, since set.base.
	last     atomic.Int64 // when the last byte was read (or the answer began)
	deadline int64        // when the write deadline was last set (Read only)

	release func() // gives back the user's stream slot at Close; nil: none

	mu    sync.Mutex
	ended bool
	done  bool
	sse   bool // immutable, beside mu's fields to keep the struct small
	get   bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		s := b.set
		now := int64(time.Since(s.base))
		b.last.Store(now)
		if b.w != nil && now-b.deadline >= int64(s.write/16) {
			b.deadline = now
			_ = b.w.SetWriteDeadline(s.base.Add(time.Duration(now) + s.write))
		}
	}
	if err != nil && err != io.EOF {
		b.mu.Lock()
		ended := b.ended
		b.mu.Unlock()
		if ended {
			return n, io.EOF
		}
	}
	return n, err
}

// idleCheck runs when the idle timer fires: it ends the answer when no
// byte came for idle, and otherwise waits until idle after the last one.
func (b *streamBody) idleCheck() {
	idle := b.set.idle
	quiet := time.Since(b.set.base) - time.Duration(b.last.Load())
	if quiet < idle {
		b.mu.Lock()
		if !b.done && !b.ended {
			b.timer.Reset(idle - quiet)
		}
		b.mu.Unlock()
		return
	}
	b.end()
}

// end closes the upstream body so that a blocked Read returns, which Read
// turns into io.EOF.
func (b *streamBody) end() {
	b.mu.Lock()
	if b.done || b.ended {
		b.mu.Unlock()
		return
	}
	b.ended = true
	b.mu.Unlock()
	_ = b.rc.Close()
}

func (b *streamBody) Close() error {
	b.mu.Lock()
	first := !b.done
	b.done = true
	b.mu.Unlock()
	if first && b.release != nil {
		b.release()
	}
	b.timer.Stop() // after done: idleCheck no longer resets it
	b.set.mu.Lock()
	delete(b.set.open, b)
	b.set.mu.Unlock()
	err := b.rc.Close()
	b.resp.Trailer = nil // read by ReverseProxy after Close
	return err
}
