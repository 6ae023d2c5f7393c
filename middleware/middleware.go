package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"

	"github.com/mcpguard/mcpguard/internal/strictjson"
	"github.com/mcpguard/mcpguard/prm"
)

// Middleware authorizes requests to an MCP server. Create it with [New]; it
// is safe for concurrent use and holds no per-request state except the
// step-up counters.
type Middleware struct {
	cfg           Config
	metadataURL   string
	metadata      *published // published.go
	pathInserted  string
	rootPath      string
	realm         string
	origins       originPolicy
	policy        policy
	rules         *ruleSet // nil: no Config.Rules (rules.go)
	pins          *pins    // nil: Config.Pins is off (pins.go)
	implies       map[string]map[string]struct{}
	answers       [numKinds]answer
	log           *slog.Logger
	onDecision    func(context.Context, Decision)
	refusals      refusalSampler   // logging.go
	dpop          *dpopState       // nil when DPoP is off (dpop.go)
	pending       *pendingSet      // nil when the step-up bound is disabled
	public        *publicSet       // nil: no public operation
	json          strictjson.Pool  // the body peek's tokenizer buffers
	sessions      *sessions        // session binding (session.go)
	tasks         OwnerStore       // task owners, kind kindTask (tasks.go)
	answerWriters answerWriterPool // the answer layer (answers.go)
	inflight      *inflightTable   // requests being served, for cancellation (inflight.go)
	events        *eventTable      // event IDs sent without a session, for Last-Event-ID (events.go)
}

// New validates cfg and returns a Middleware. All parsing happens here:
// the metadata document and its URL (RFC 9728 §3.1), the challenges
// (every 401, 400 and per-operation 403 header value is rendered once),
// the scope closure and the Origin list. Its errors match
// Error{Reason: "config"}; for bad Metadata the error also wraps prm.ErrInvalidMetadata
// or prm.ErrInvalidResource.
func New(cfg Config) (*Middleware, error) {
	derived := cfg.Metadata.ScopesSupported == nil
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	ds, err := newDPoP(&cfg)
	if err != nil {
		return nil, err
	}
	h, err := newPublished(cfg.Metadata, derived)
	if err != nil {
		return nil, fmt.Errorf("%w: Metadata: %w", errConfig, err)
	}
	m := &Middleware{cfg: cfg, metadata: h, realm: cfg.Realm, log: cfg.Logger, onDecision: cfg.OnDecision, dpop: ds}
	if m.metadataURL, err = prm.MetadataURL(cfg.Metadata.Resource); err != nil {
		return nil, fmt.Errorf("%w: Metadata: %w", errConfig, err)
	}
	if m.pathInserted, m.rootPath, err = prm.Paths(cfg.Metadata.Resource); err != nil {
		return nil, fmt.Errorf("%w: Metadata: %w", errConfig, err)
	}
	if m.origins, err = newOriginPolicy(cfg.Metadata.Resource, cfg.AllowedOrigins); err != nil {
		return nil, err
	}
	m.implies = compileImplies(cfg.ScopeImplies)
	if m.rules, err = compileRules(cfg.Rules, cfg.TenantArgument); err != nil {
		return nil, err
	}
	m.policy = m.compilePolicy(&cfg)
	if m.rules != nil {
		// The values of mcp.method and mcp.name a request most likely
		// has, and of user.issuer, are made once (rules_env.go).
		m.rules.intern(maps.Keys(m.policy.methods), maps.Keys(m.policy.tools), maps.Keys(m.policy.prompts), slices.Values(cfg.Metadata.AuthorizationServers))
	}
	m.pins = newPins(&cfg)
	m.public = m.newPublicSet(cfg.Operations.Public)
	m.sessions = newSessions(cfg.Sessions)
	m.inflight = newInflightTable()
	m.events = newEventTable(cfg.Sessions.Max, cfg.Sessions.IdleTimeout, cfg.Now)
	m.events.client = cfg.Sessions.BindClient
	m.buildAnswers(cfg.Scopes, retryAfterValue(cfg.RetryAfter))
	m.buildDPoPAnswers(cfg.Scopes)
	if cfg.StepUpLimit > 0 {
		m.pending = newPendingSet(defaultStepUpKeys)
	}
	m.tasks = cfg.Sessions.Store
	if m.tasks == nil {
		m.tasks = newMemoryOwnerStore(memoryOwnerConfig{Now: cfg.Now})
	}
	return m, nil
}

// Handler returns next protected by the middleware. It is a
// mux.MiddlewareFunc for gorilla/mux and plain func(http.Handler)
// http.Handler for net/http. Checks run in this order, each answering as
// documented in docs/answers.md (Every answer a client can see):
//
//  1. Origin (403, no challenge);
//  2. bearer token from the Authorization header (RFC 6750 §2.1: 401 or 400
//     invalid_request);
//  3. token validation (401 invalid_token; 503 when keys are unavailable);
//  4. the base scopes (Config.Scopes), which every operation needs (403
//     insufficient_scope listing them, or the terminal 403 of the step-up
//     bound), when OperationPolicy.Public lists no operation; with public
//     operations this check is part of step 7, since the body may name a
//     public one;
//  5. for POST only, the JSON-RPC body, read up to Config.MaxBodyBytes
//     (413) and parsed (400);
//  6. the MCP request headers against the body (400, JSON-RPC -32020;
//     -32602 for a 2026-07-28 request without the _meta protocol version);
//  7. the operation policy (docs/policy.md): DenyUnlisted (terminal 403),
//     then the scopes of the operation, base scopes included (403
//     insufficient_scope, or the terminal 403 of the step-up bound).
//
// The body is never read before the token is valid and holds the base
// scopes, except when OperationPolicy.Public lists operations
// ([PublicOperations]): then for a request without an Authorization header,
// and for a valid token without the base scopes, it is read to learn the
// operation. A refusal decided before the body was read (steps 1-4, or a
// declared body over the limit) closes the connection after the answer
// instead of draining the body, so that a client cannot hold the
// connection by trickling a body (HTTP/1.x: "Connection: close", and a
// read deadline of now). next receives a
// shallow copy of the request carrying the [Principal] in its context and,
// for POST, a body with exactly the bytes the client sent; the caller's
// request is not modified. Requests other than POST are authorized with the
// base scopes only. Each request's decision, authorized or not, is reported
// to Config.OnDecision before the answer is written or next runs. Handler
// panics if next is nil.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	if next == nil {
		panic("middleware: Handler(nil)")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.serve(w, r, next)
	})
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	origin, hasOrigin := r.Header["Origin"]
	if hasOrigin && m.origins.cors(w, r) {
		return // a CORS preflight of an allowed origin (origin.go)
	}
	p, err := m.authenticateOrigin(r, origin)
	if err != nil {
		if m.public != nil && isAnonymous(r, err) {
			m.servePublic(w, r, next)
			return
		}
		closeUnread(w, r)
		m.refuse(w, r, &refusal{err: err})
		return
	}
	setNextNonce(w, p)
	if m.public == nil {
		// Every operation needs the base scopes, and with no public
		// operation nothing in the body can exempt it: a token lacking
		// them is refused before the body is read, so that a valid token
		// cannot hold the connection by trickling a body either.
		if missing := m.missing(p.Scopes, m.policy.base.scopes); missing != nil {
			closeUnread(w, r)
			m.insufficient(w, r, &refusal{p: p, g: m.policy.none}, m.policy.base, missing)
			return
		}
	}
	var msg message
	post := r.Method == http.MethodPost
	if post {
		body, err := readBody(r, m.cfg.MaxBodyBytes)
		if err != nil {
			closeUnread(w, r) // the rest of the body is not read
			m.refuse(w, r, &refusal{err: err, p: p})
			return
		}
		if err = parseMessageWith(&m.json, body, &msg); err != nil {
			m.refuse(w, r, &refusal{err: err, p: p})
			return
		}
		if err = checkHeaders(r.Header, &msg); err != nil {
			g, _ := m.policy.lookup(&msg) // labels only
			m.refuse(w, r, &refusal{err: err, p: p, g: g, id: msg.id})
			return
		}
	}
	g, err := m.policy.lookup(&msg)
	g, err = m.public.apply(&msg, g, err)
	if err != nil {
		if !post {
			closeUnread(w, r) // a GET or DELETE body is not read
		}
		m.refuse(w, r, &refusal{err: err, p: p, g: g})
		return
	}
	op := g.op
	// Without public operations the base scopes were checked above: an
	// operation needing exactly them (every GET) is not checked again.
	if m.public != nil || op != m.policy.base {
		if missing := m.missing(p.Scopes, op.scopes); missing != nil {
			if !post {
				closeUnread(w, r)
			}
			m.insufficient(w, r, &refusal{p: p, g: g}, op, missing)
			return
		}
	}
	if m.rules != nil && post && m.applyRules(w, r, p, g, &msg) {
		return // denied, or a step-up (rules.go)
	}
	if m.pending != nil && !m.pending.empty() {
		m.steppedUp(r.Context(), p)
	}
	p.grant = g
	m.admit(w, r, next, p, &msg)
}

// admit passes r, authorized for p (p.grant is its operation; msg its
// POST message, empty otherwise), to next: once its session ID is p's and,
// for a task operation, the task is p's, with the principal in its
// context and the POST body replayed byte for byte, after reporting the
// decision.
func (m *Middleware) admit(w http.ResponseWriter, r *http.Request, next http.Handler, p *Principal, msg *message) {
	sid, held, err := m.bindSession(r, p, next)
	if held.e != nil {
		defer m.releaseSession(r.Context(), held)
	}
	if sid == "" && err == nil {
		err = m.checkResume(r, p)
	}
	if err == nil && m.pins != nil && string(msg.method.v) == methodToolsCall && m.refusePinned(w, r, p, msg) {
		return // a changed tool, or the pin store failed (pins.go)
	}
	if err != nil {
		if r.Method != http.MethodPost {
			closeUnread(w, r) // a GET or DELETE body is not read
		}
		m.refuse(w, r, &refusal{err: err, p: p, g: p.grant})
		return
	}
	if m.refuseMethod(w, r, p) {
		return // a method or a body Streamable HTTP has no use for (httpmethod.go)
	}
	// Task operations are never public ([New] refuses tasks/* in
	// Public.Methods): one without a token names a task the anonymous
	// principal must own (anonymousTaskOp).
	if isTaskOp(msg.method.v) && m.checkTask(w, r, p, msg) {
		return
	}
	r2 := withPrincipal(r, p)
	if r.Method == http.MethodPost {
		b := &bodyReader{}
		b.Reset(msg.body)
		r2.Body = b
		r2.ContentLength = int64(len(msg.body))
		r2.TransferEncoding = nil
	}
	m.reportPass(r2.Context(), r.Header, p, msg)
	msg.sid = sid
	if string(msg.method.v) == methodCancelled && !m.inflight.mayCancel(r.Header, p, msg) {
		// Another principal's request, or none in flight (inflight.go):
		// answered as the server answers a notification.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if k, ok := m.inflight.start(r.Header, p, msg); ok {
		defer m.inflight.end(k)
	}
	m.serveNext(w, r2, next, p, msg)
}

var errNilClaims = errors.New("middleware: validator returned no claims")

// authenticate runs the checks that need no body: Origin, bearer, token.
func (m *Middleware) authenticate(r *http.Request) (*Principal, error) {
	return m.authenticateOrigin(r, r.Header["Origin"])
}

// authenticateOrigin is authenticate given r's Origin header values.
func (m *Middleware) authenticateOrigin(r *http.Request, origin []string) (*Principal, error) {
	if err := m.origins.checkValues(origin); err != nil {
		return nil, err
	}
	tok, isDPoP, err := m.credentials(r)
	if err != nil {
		return nil, err
	}
	c, err := m.cfg.Validator.Validate(r.Context(), tok)
	err = m.afterValidation(tok, err)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errNilClaims
	}
	proof, err := m.checkDPoP(r, tok, isDPoP, c)
	if err != nil {
		return nil, err
	}
	p := newPrincipal(c)
	if proof != nil {
		p.SenderConstrained, p.KeyThumbprint = true, proof.JKT
		p.nextNonce = m.dpop.v.NextNonce(proof, m.cfg.Now())
	}
	return p, nil
}

// Authenticate makes the decision of [Middleware.Handler] that needs no
// body: Origin, bearer token, token validation and the base scopes
// (Config.Scopes), as rs/cors exports OriginAllowed. It never reads the
// body and never writes a response; answer a failure with
// [Middleware.Challenge]. When only scopes are missing it returns the
// principal together with an [Error] "insufficient_scope". It reports nothing to
// Config.OnDecision.
func (m *Middleware) Authenticate(r *http.Request) (*Principal, error) {
	p, err := m.authenticate(r)
	if err != nil {
		return nil, err
	}
	if missing := m.missing(p.Scopes, m.policy.base.scopes); missing != nil {
		return p, Error{Reason: "insufficient_scope", Required: slices.Clone(m.policy.base.scopes), Missing: missing}
	}
	return p, nil
}

// RequireScopes returns a middleware that additionally requires scopes on
// the routes it wraps (per-route step-up), for gorilla/mux subrouters
// (sub.Use(m.RequireScopes("admin"))) or http.ServeMux handlers. It must
// run behind [Middleware.Handler]: without a [Principal] in the context it
// answers 401 and logs a warning. A token lacking a scope gets 403
// insufficient_scope listing every scope the request needs: those the
// operation needed in Handler plus scopes. It panics if a scope is not an
// RFC 6749 §3.3 scope token or is offline_access, as regexp.MustCompile
// does, since that is a programming error. Its refusals are reported to
// Config.OnDecision, with the labels of the operation Handler authorized.
func (m *Middleware) RequireScopes(scopes ...string) func(http.Handler) http.Handler {
	if err := checkScopes("RequireScopes", scopes); err != nil {
		panic(err.Error())
	}
	route := appendUnique(nil, scopes...)
	m.metadata.addScopes(route) // published.go
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, ok := PrincipalFromContext(r.Context())
			if !ok {
				closeUnread(w, r)
				m.refuse(w, r, &refusal{err: errNoPrincipal})
				return
			}
			if p.Anonymous { // a public operation: scopes need a token
				closeUnread(w, r)
				m.refuse(w, r, &refusal{err: errNoToken, g: p.grant})
				return
			}
			if missing := m.missing(p.Scopes, route); missing != nil {
				closeUnread(w, r) // behind Protect, the body is not read yet
				base := m.policy.base.scopes
				if p.grant != nil {
					base = p.grant.op.scopes
				}
				required := appendUnique(slices.Clone(base), route...)
				m.insufficient(w, r, &refusal{p: p, g: p.grant}, scopeNeed(required), missing)
				return
			}
			if m.pending != nil && !m.pending.empty() {
				m.steppedUp(r.Context(), p)
			}
			next.ServeHTTP(w, r)
		})
	}
}

// insufficient answers rf (its principal and operation set by the
// caller) for an operation needing need.scopes, of which missing are not
// granted: 403 insufficient_scope (RFC 6750 §3.1) with need's challenge
// (rendered here when need has none precomputed), or the terminal 403 once
// the principal has exhausted its step-ups for this scope set.
func (m *Middleware) insufficient(w http.ResponseWriter, r *http.Request, rf *refusal, need *operation, missing []string) {
	serr := Error{Reason: "insufficient_scope", Required: need.scopes, Missing: missing}
	rf.err = serr
	p := rf.p
	if p != nil && !p.Anonymous && m.pending != nil {
		// Anonymous principals (public operations) share no identity:
		// they are challenged uncounted.
		storeKey := p.UserID() + "\x00" + need.key
		now := m.cfg.Now()
		n, err := m.incrStepUp(r.Context(), p, storeKey, now)
		// Remember the challenge here, so that a later success of p with
		// these scopes resets the counter (the terminal answer included:
		// a principal that is granted the scope later gets its bound back).
		m.pending.add(p, need.scopes, storeKey, now.Add(m.cfg.StepUpWindow), now)
		switch {
		case err != nil:
			m.log.LogAttrs(r.Context(), slog.LevelWarn, "middleware: step-up store failed", slog.String("error", err.Error()))
		case n > m.cfg.StepUpLimit:
			rf.err = fmt.Errorf("%w: %w", errStepUpExhausted, serr)
			m.refuse(w, r, rf)
			return
		}
	}
	hdr := need.challenge
	switch {
	case p != nil && m.cfg.LegacyScopes == ScopeUnion && !isModern(r.Header):
		hdr = m.stepUpHeader(appendUnique(slices.Clone(need.scopes), p.Scopes...))
	case hdr == "":
		hdr = m.stepUpHeader(need.scopes)
	}
	rf.reason, rf.answer = reasonInsufficientScope, m.answers[kindInsufficientScope]
	rf.challenge = m.dpopStepUp(r, hdr)
	m.send(w, r, rf)
}

// Challenge answers r for err exactly as [Middleware.Handler] would, for
// handlers that authenticate with [Middleware.Authenticate] or check
// access themselves (err from [CheckTenant], an [Error] "insufficient_scope",
// …). An Error "insufficient_scope" gets a 403 insufficient_scope listing
// its Required scopes
// (with the revision's scope strategy and the step-up bound, using the
// [Principal] in r's context if any). An error the middleware does not
// recognize is treated as a token failure: 401 invalid_token. The error
// text is only logged. The refusal is reported to Config.OnDecision, with
// the labels of the operation Handler authorized. Since it cannot know
// whether the caller read r's body, it closes the connection after the
// answer (Connection: close and a read deadline of now) unless r has no
// body or Handler read it, so that a client trickling an unread body
// cannot hold the connection.
func (m *Middleware) Challenge(w http.ResponseWriter, r *http.Request, err error) {
	closeUnread(w, r)
	p, _ := PrincipalFromContext(r.Context())
	if p != nil && p.Anonymous { // anything beyond a public operation needs a token
		m.refuse(w, r, &refusal{err: errNoToken, g: p.grant})
		return
	}
	var granted []string
	var g *grant
	if p != nil {
		granted, g = p.Scopes, p.grant
	}
	if kindOf(err) == kindInsufficientScope {
		required := m.policy.base.scopes
		if se, ok := scopeErrorOf(err); ok && len(se.Required) > 0 {
			required = se.Required
		}
		m.insufficient(w, r, &refusal{p: p, g: g}, scopeNeed(required), m.missing(granted, required))
		return
	}
	m.refuse(w, r, &refusal{err: err, p: p, g: g})
}

// MetadataHandler returns the RFC 9728 metadata handler built by
// prm.Handler from Config.Metadata (with the scopes of the Protect and
// RequireScopes routes built so far in a derived scopes_supported). Mount it, outside the middleware, at
// both paths of [Middleware.MetadataPaths]: clients fetch it before they
// have a token.
func (m *Middleware) MetadataHandler() http.Handler { return m.metadata }

// MetadataPaths returns the paths to mount [Middleware.MetadataHandler] at:
// the RFC 9728 §3.1 path-inserted path and the root well-known path
// (prm.Paths). They are equal when the resource has no path.
func (m *Middleware) MetadataPaths() (pathInserted, root string) {
	return m.pathInserted, m.rootPath
}

// ResourceMetadataURL returns the resource_metadata URL sent in every
// challenge (RFC 9728 §5.1): prm.MetadataURL of Metadata.Resource.
func (m *Middleware) ResourceMetadataURL() string { return m.metadataURL }
