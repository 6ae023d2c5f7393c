package audit_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/gosdk"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

// Scopes of the test servers, as in the example.
const (
	baseScope  = "mcp:tools"
	readScope  = "notes:read"
	writeScope = "notes:write"
	adminScope = "notes:admin"
	clientID   = "audit-test-client"
)

// env is a development authorization server and one MCP server under
// audit, both on 127.0.0.1.
type env struct {
	issuer, mcpURL, metaURL string
	as                      *devmint.Server
	validator               middleware.TokenValidator
	// tokA is alice of tenant t1, who may list notes but not write them;
	// tokB is bob of tenant t2, who may also write (so that a server that
	// filters tools/list shows him notes_write).
	tokA, tokB string
}

// newEnv starts the authorization server (wrapped by asWrap, if not nil)
// and the MCP server that build returns.
func newEnv(t *testing.T, build func(*env) http.Handler, asWrap func(http.Handler) http.Handler) *env {
	t.Helper()
	asTS := httptest.NewUnstartedServer(nil)
	mcpTS := httptest.NewUnstartedServer(nil)
	e := &env{
		issuer: "http://" + asTS.Listener.Addr().String(),
		mcpURL: "http://" + mcpTS.Listener.Addr().String() + "/mcp",
	}
	e.metaURL, _ = prm.MetadataURL(e.mcpURL)
	as, err := devmint.New(devas.Config{
		Issuer:      e.issuer,
		Resources:   []string{e.mcpURL},
		Scopes:      []string{baseScope, readScope, writeScope, adminScope},
		AutoApprove: true,
		EnableDCR:   true,
		Clients: []cimd.Client{{Document: cimd.Document{
			ClientID: clientID, ClientName: "audit test", RedirectURIs: []string{"http://127.0.0.1/callback"},
			TokenEndpointAuthMethod: "none", ApplicationType: "native",
		}}},
	})
	if err != nil {
		t.Fatalf("devas.New: %v", err)
	}
	e.as = as
	var asH http.Handler = as
	if asWrap != nil {
		asH = asWrap(as)
	}
	asTS.Config.Handler = asH
	asTS.Start()
	t.Cleanup(asTS.Close)
	v, err := validate.New(validate.Config{
		Issuers:     []validate.Issuer{{Issuer: e.issuer, Keys: &validate.StaticKeys{Set: as.PublicKeys()}}},
		Audiences:   []string{e.mcpURL},
		TenantClaim: "tenant",
	})
	if err != nil {
		t.Fatalf("validate.New: %v", err)
	}
	e.validator = v
	e.tokA = e.token(t, "alice", "t1", baseScope, readScope)
	e.tokB = e.token(t, "bob", "t2", baseScope, readScope, writeScope)
	mcpTS.Config.Handler = build(e)
	mcpTS.Start()
	t.Cleanup(mcpTS.Close)
	return e
}

func (e *env) token(t *testing.T, sub, tenant string, scopes ...string) string {
	t.Helper()
	tok, err := e.as.IssueToken(sub, tenant, clientID, e.mcpURL, scopes)
	if err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	return tok
}

// exampleServer is the example MCP server, as examples/mcpserver runs it,
// with the env's validator, wrapped by wrapV if not nil.
func exampleServer(t *testing.T, wrapV func(middleware.TokenValidator) middleware.TokenValidator) func(*env) http.Handler {
	return func(e *env) http.Handler {
		v := e.validator
		if wrapV != nil {
			v = wrapV(v)
		}
		srv, err := server.New(server.Config{
			Resource:             e.mcpURL,
			AuthorizationServers: []string{e.issuer},
			Validator:            v,
			Scopes:               []string{baseScope},
		})
		if err != nil {
			t.Fatalf("server.New: %v", err)
		}
		return srv
	}
}

// stack configures notesStack, the go-sdk + mcpguard server the broken
// variants are built from.
type stack struct {
	stateful      bool // go-sdk default (stateful) handler
	adapter       bool // through the gosdk adapter (session binding)
	noToolScopes  bool // the middleware knows no per-tool scopes
	tenantFromArg bool // notes_list serves the tenant its argument names
	anyOrigin     bool // AllowedOrigins: ["*"]
	sse           bool // answers as text/event-stream (go-sdk default)
	inToolScope   bool // notes_write checks its scope itself (a tool error)
	nonce         bool // notes_list answers carry a fresh request ID
	// writeScopes, if not nil, replaces notes_write's scopes.
	writeScopes []string
	// inner wraps the go-sdk handler, inside the middleware.
	inner func(e *env, next http.Handler) http.Handler
	// hideSessions hides Mcp-Session-Id from the middleware (renamed on
	// the way in and out), as if nothing bound sessions in front of the
	// server: the audit must then see the server's own flaws.
	hideSessions bool
}

// notesStack is a notes server like the example, built from parts so that
// one rule at a time can be broken.
func notesStack(t *testing.T, s stack) func(*env) http.Handler {
	return func(e *env) http.Handler {
		notes := &noteStore{byTenant: map[string][]string{}}
		ms := mcp.NewServer(&mcp.Implementation{Name: "audit-test", Version: "0"}, nil)
		type listArgs struct {
			Tenant string `json:"tenant,omitempty"`
		}
		type writeArgs struct {
			Text string `json:"text"`
		}
		mcp.AddTool(ms, &mcp.Tool{Name: "whoami", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]any, error) {
				p, _ := middleware.PrincipalFromContext(ctx)
				return nil, map[string]any{"subject": p.Subject, "tenant": p.Tenant}, nil
			})
		mcp.AddTool(ms, &mcp.Tool{Name: "notes_list", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, _ *mcp.CallToolRequest, in listArgs) (*mcp.CallToolResult, map[string]any, error) {
				tenant, _ := middleware.TenantFromContext(ctx)
				switch {
				case s.tenantFromArg && in.Tenant != "":
					tenant = in.Tenant
				case middleware.CheckTenant(ctx, in.Tenant) != nil:
					return nil, nil, errors.New("tenant does not match the caller's tenant")
				}
				out := map[string]any{"tenant": tenant, "notes": notes.list(tenant)}
				if s.nonce {
					b := make([]byte, 8)
					_, _ = rand.Read(b)
					out["request_id"] = hex.EncodeToString(b)
				}
				return nil, out, nil
			})
		mcp.AddTool(ms, &mcp.Tool{Name: "notes_write"},
			func(ctx context.Context, _ *mcp.CallToolRequest, in writeArgs) (*mcp.CallToolResult, map[string]any, error) {
				if p, _ := middleware.PrincipalFromContext(ctx); s.inToolScope && (p == nil || !slices.Contains(p.Scopes, writeScope)) {
					return nil, nil, errors.New("insufficient scope: notes:write is required")
				}
				tenant, _ := middleware.TenantFromContext(ctx)
				notes.add(tenant, in.Text)
				return nil, map[string]any{"tenant": tenant}, nil
			})
		var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms },
			&mcp.StreamableHTTPOptions{Stateless: !s.stateful, JSONResponse: !s.sse})
		if s.inner != nil {
			h = s.inner(e, h)
		}
		if s.hideSessions {
			h = renameSessionHeader(h, hiddenSessionHeader, "Mcp-Session-Id")
		}
		tools := map[string][]string{"notes_list": {readScope}, "notes_write": {writeScope}}
		if s.writeScopes != nil {
			tools["notes_write"] = s.writeScopes
		}
		if s.noToolScopes {
			tools = nil
		}
		cfg := middleware.Config{
			Validator: e.validator,
			Metadata: prm.Metadata{
				Resource: e.mcpURL, AuthorizationServers: []string{e.issuer},
				ScopesSupported: []string{baseScope}, BearerMethodsSupported: []string{"header"},
			},
			Scopes:     []string{baseScope},
			Operations: middleware.OperationPolicy{Tools: tools},
		}
		if s.anyOrigin {
			cfg.AllowedOrigins = []string{"*"}
		}
		mw, err := middleware.New(cfg)
		if err != nil {
			t.Fatalf("middleware.New: %v", err)
		}
		mux := http.NewServeMux()
		inserted, root := mw.MetadataPaths()
		mux.Handle(inserted, mw.MetadataHandler())
		mux.Handle(root, mw.MetadataHandler())
		if s.adapter {
			a, err := gosdk.New(gosdk.Config{Middleware: mw})
			if err != nil {
				t.Fatalf("gosdk.New: %v", err)
			}
			a.Install(ms)
			mux.Handle("/mcp", a.Handler(h))
		} else if s.hideSessions {
			mux.Handle("/mcp", renameSessionHeader(mw.Handler(h), "Mcp-Session-Id", hiddenSessionHeader))
		} else {
			mux.Handle("/mcp", mw.Handler(h))
		}
		return mux
	}
}

const hiddenSessionHeader = "X-Hidden-Session-Id"

// renameSessionHeader renames the request header from to to for next, and
// the answer's header to back to from.
func renameSessionHeader(next http.Handler, from, to string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		if v := r.Header.Values(from); v != nil {
			r.Header.Del(from)
			r.Header[http.CanonicalHeaderKey(to)] = v
		}
		next.ServeHTTP(&renamingWriter{ResponseWriter: w, from: to, to: from}, r)
	})
}

type renamingWriter struct {
	http.ResponseWriter
	from, to string
	done     bool
}

func (w *renamingWriter) WriteHeader(status int) {
	if !w.done {
		w.done = true
		h := w.Header()
		if v := h.Values(w.from); v != nil {
			h.Del(w.from)
			h[http.CanonicalHeaderKey(w.to)] = v
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *renamingWriter) Write(b []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *renamingWriter) Flush() {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *renamingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// noteStore is the notes of notesStack.
type noteStore struct {
	mu       sync.Mutex
	byTenant map[string][]string
}

func (s *noteStore) list(tenant string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{}, s.byTenant[tenant]...)
}

func (s *noteStore) add(tenant, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byTenant[tenant] = append(s.byTenant[tenant], text)
}

// rpcMethod peeks the method and params.name of a JSON-RPC body.
func rpcMethod(body []byte) (method, name string) {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Method, m.Params.Name
}

// readBody reads r's body and puts it back.
func readBody(r *http.Request) []byte {
	if r.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b
}

// runThenRefuse runs notes_write for everyone and only then refuses, with
// a proper 403 challenge, a caller without notes:write: the tool has
// already run.
func runThenRefuse(e *env, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, name := rpcMethod(readBody(r)); name == "notes_write" {
			p, _ := middleware.PrincipalFromContext(r.Context())
			if p == nil || !slices.Contains(p.Scopes, writeScope) {
				next.ServeHTTP(httptest.NewRecorder(), r)
				challenge.Write(w, challenge.StepUp(e.metaURL, baseScope, writeScope))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sessionLayer gives 2025-11-25 clients sessions on top of a stateless
// server: initialize mints an Mcp-Session-Id, later requests must carry a
// known one, DELETE ends it. With bind, a session serves only the subject
// that created it (404 for anyone else).
type sessionLayer struct {
	next http.Handler
	bind bool

	mu       sync.Mutex
	sessions map[string]string // id → subject
}

func sessions(bind bool) func(*env, http.Handler) http.Handler {
	return func(_ *env, next http.Handler) http.Handler {
		return &sessionLayer{next: next, bind: bind, sessions: map[string]string{}}
	}
}

func (s *sessionLayer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, _ := middleware.PrincipalFromContext(r.Context())
	sub := ""
	if p != nil {
		sub = p.Subject
	}
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		s.mu.Lock()
		owner, ok := s.sessions[id]
		if ok && s.bind && owner != sub {
			ok = false
		}
		if ok && r.Method == http.MethodDelete {
			delete(s.sessions, id)
		}
		s.mu.Unlock()
		if !ok {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if method, _ := rpcMethod(readBody(r)); method != "initialize" {
		s.next.ServeHTTP(w, r)
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	s.mu.Lock()
	s.sessions[id] = sub
	s.mu.Unlock()
	w.Header().Set("Mcp-Session-Id", id)
	s.next.ServeHTTP(w, r)
}

// rewrite runs next into a recorder, lets fn change the answer, and sends
// it.
func rewrite(next http.Handler, fn func(r *http.Request, rec *httptest.ResponseRecorder)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		fn(r, rec)
		for k, vs := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = vs
			}
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// setBody replaces a recorded body.
func setBody(rec *httptest.ResponseRecorder, s string) {
	rec.Body = bytes.NewBufferString(s)
}

// hostDerived makes every URL in challenges and metadata follow the
// request's Host or X-Forwarded-Host, as servers that build them from the
// request do.
func hostDerived(e *env, next http.Handler) http.Handler {
	real := strings.TrimPrefix(strings.TrimSuffix(e.mcpURL, "/mcp"), "http://")
	return rewrite(next, func(r *http.Request, rec *httptest.ResponseRecorder) {
		host := r.Host
		if fh := r.Header.Get("X-Forwarded-Host"); fh != "" {
			host = fh
		}
		if vs := rec.Header().Values("WWW-Authenticate"); len(vs) > 0 {
			rec.Header().Del("WWW-Authenticate")
			for _, v := range vs {
				rec.Header().Add("WWW-Authenticate", strings.ReplaceAll(v, real, host))
			}
		}
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			setBody(rec, strings.ReplaceAll(rec.Body.String(), real, host))
		}
	})
}

// dropErrorCode removes error and error_description from the challenge
// of a 401 to a request that carried a token.
func dropErrorCode(e *env, next http.Handler) http.Handler {
	return rewrite(next, func(r *http.Request, rec *httptest.ResponseRecorder) {
		if rec.Code == http.StatusUnauthorized && r.Header.Get("Authorization") != "" {
			rec.Header().Set("WWW-Authenticate", `Bearer scope="`+baseScope+`", resource_metadata="`+e.metaURL+`"`)
		}
	})
}

// leakErrors answers a rejected token with the validator's error text.
func leakErrors(_ *env, next http.Handler) http.Handler {
	return rewrite(next, func(r *http.Request, rec *httptest.ResponseRecorder) {
		if rec.Code == http.StatusUnauthorized && r.Header.Get("Authorization") != "" {
			setBody(rec, "validate: signature invalid: go-jose/go-jose: error in cryptographic primitive")
		}
	})
}

// advertiseOffline adds offline_access to scopes_supported and to the
// challenge scope.
func advertiseOffline(_ *env, next http.Handler) http.Handler {
	return rewrite(next, func(r *http.Request, rec *httptest.ResponseRecorder) {
		if v := rec.Header().Get("WWW-Authenticate"); v != "" {
			rec.Header().Set("WWW-Authenticate", strings.Replace(v, `scope="`+baseScope, `scope="`+baseScope+" "+"offline_access", 1))
		}
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			setBody(rec, strings.Replace(rec.Body.String(), `"scopes_supported":["`+baseScope+`"`, `"scopes_supported":["`+baseScope+`","offline_access"`, 1))
		}
	})
}

// crashOnBigHeaders answers a long Authorization header with 500.
func crashOnBigHeaders(_ *env, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Get("Authorization")) > 16<<10 {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// queryToken moves an access_token query parameter into the header.
func queryToken(_ *env, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := r.URL.Query().Get("access_token"); tok != "" && r.Header.Get("Authorization") == "" {
			r2 := r.Clone(r.Context())
			r2.URL.RawQuery = ""
			r2.Header.Set("Authorization", "Bearer "+tok)
			next.ServeHTTP(w, r2)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// outer wraps a built server.
func outer(build func(*env) http.Handler, wrap func(*env, http.Handler) http.Handler) func(*env) http.Handler {
	return func(e *env) http.Handler { return wrap(e, build(e)) }
}

// mixUp serves the authorization server's metadata under another issuer.
func mixUp(next http.Handler) http.Handler {
	return rewrite(next, func(r *http.Request, rec *httptest.ResponseRecorder) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			var m map[string]any
			if json.Unmarshal(rec.Body.Bytes(), &m) == nil {
				m["issuer"] = "https://honest.example"
				b, _ := json.Marshal(m)
				setBody(rec, string(b))
			}
		}
	})
}

// noneAccepting is a validator that, like libraries misused with alg
// "none" allowed, accepts an unsigned token's claims as they are.
type noneAccepting struct{ next middleware.TokenValidator }

func (n noneAccepting) Validate(ctx context.Context, raw string) (*validate.Claims, error) {
	parts := strings.Split(raw, ".")
	if len(parts) == 3 && parts[2] == "" {
		hdr, _ := base64.RawURLEncoding.DecodeString(parts[0])
		if bytes.Contains(hdr, []byte(`"alg":"none"`)) {
			payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
			var c struct {
				Iss, Sub, Aud, Scope, ClientID string
				Exp                            int64
			}
			if json.Unmarshal(payload, &c) == nil {
				return &validate.Claims{Issuer: c.Iss, Subject: c.Sub, ClientID: c.ClientID, Audience: []string{c.Aud},
					Scopes: strings.Fields(c.Scope), Expiry: time.Unix(c.Exp, 0).UTC()}, nil
			}
		}
	}
	return n.next.Validate(ctx, raw)
}

// oneScopeAtATime drops notes:admin from every 403 challenge, so that a
// client learns the scopes of notes_write one challenge at a time.
func oneScopeAtATime(_ *env, next http.Handler) http.Handler {
	return rewrite(next, func(r *http.Request, rec *httptest.ResponseRecorder) {
		if v := rec.Header().Get("WWW-Authenticate"); rec.Code == http.StatusForbidden && v != "" {
			rec.Header().Set("WWW-Authenticate", strings.Replace(v, " "+adminScope, "", 1))
		}
	})
}

// protoDerived makes challenges and metadata follow X-Forwarded-Proto, as
// servers behind a proxy that trust it do.
func protoDerived(e *env, next http.Handler) http.Handler {
	origin := strings.TrimSuffix(e.mcpURL, "/mcp")
	return rewrite(next, func(r *http.Request, rec *httptest.ResponseRecorder) {
		if r.Header.Get("X-Forwarded-Proto") != "https" {
			return
		}
		up := "https://" + strings.TrimPrefix(origin, "http://")
		if v := rec.Header().Get("WWW-Authenticate"); v != "" {
			rec.Header().Set("WWW-Authenticate", strings.ReplaceAll(v, origin, up))
		}
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			setBody(rec, strings.ReplaceAll(rec.Body.String(), origin, up))
		}
	})
}
