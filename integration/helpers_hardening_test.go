package integration

// Helpers for the hardening suites: hostile_test.go (hostile tokens and
// requests), faults_test.go (authorization-server faults) and load_test.go
// (guarded load test). Every identifier here starts with "hx" so that it
// cannot collide with the e2e helpers in env_test.go.

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

const (
	// hxBaseScope is the example server's base scope (server.Config.Scopes).
	hxBaseScope = "mcp:tools"
	// hxRevision is the MCP revision of every hand-built request: its
	// requests are self-contained and its 403 challenges list only the
	// operation's scopes, so every expected challenge is a fixed string.
	hxRevision = "2026-07-28"
	// hxRequestID is the request header carrying the request number that
	// hxBodyReads keys on.
	hxRequestID = "X-Hx-Request"
	// hxPoll is the sleep between polls of bounded wait loops.
	hxPoll = 10 * time.Millisecond
)

// hxEnvConfig configures newHxEnv.
type hxEnvConfig struct {
	// Issuer configures the authtest issuer; Audience is always set to the
	// MCP endpoint.
	Issuer authtest.IssuerConfig
	// JWKS configures the key source. Issuer and JWKSURL are always set
	// from the issuer. Zero durations get the hx defaults below (not the
	// package defaults): RefreshInterval 1h (no background refresh during
	// a test), RefreshRateLimit 10s, WaitTimeout 1s, FetchTimeout 2s.
	JWKS jwks.Config
	// WallClockJWKS gives the key source the wall clock (jwks.Config.Now
	// nil). By default it shares the issuer's pinned clock, so that its
	// on-demand rate limit opens only when the test calls Advance: fetch
	// counts are then exact, whatever the machine's speed.
	WallClockJWKS bool
	// Validate is copied into the validator's config; Issuers, Audiences,
	// TenantClaim and Now are always set.
	Validate validate.Config
	// BeforeStart runs after the issuer exists and before the key source
	// starts its first fetch: publish extra keys or set a fault here.
	BeforeStart func(iss *authtest.Issuer)
}

// hxEnv is the example MCP server (server.New) on 127.0.0.1, validating
// tokens of one authtest issuer through a remote JWKS (validate/jwks).
type hxEnv struct {
	iss     *authtest.Issuer
	keys    *jwks.Source
	val     *validate.Validator
	srv     *server.Server
	ts      *httptest.Server
	jwksCfg jwks.Config // as given to jwks.New
	mcpURL  string      // the resource identifier and MCP endpoint
	metaURL string      // resource_metadata of every challenge
	client  *http.Client
	reads   hxBodyReads
	nextID  atomic.Int64

	closeOnce sync.Once
}

// newHxEnv starts the issuer, the key source, the validator and the
// example server. Everything is closed by t.Cleanup, or earlier by close.
func newHxEnv(t testing.TB, cfg hxEnvConfig) *hxEnv {
	t.Helper()
	e := &hxEnv{}
	e.ts = httptest.NewUnstartedServer(nil)
	e.mcpURL = "http://" + e.ts.Listener.Addr().String() + "/mcp"

	icfg := cfg.Issuer
	icfg.Audience = e.mcpURL
	e.iss = authtest.NewIssuer(t, icfg)
	if cfg.BeforeStart != nil {
		cfg.BeforeStart(e.iss)
	}

	jc := cfg.JWKS
	jc.Issuer = e.iss.URL()
	jc.JWKSURL = e.iss.JWKSURL()
	if jc.RefreshInterval == 0 {
		jc.RefreshInterval = time.Hour
	}
	if jc.RefreshRateLimit == 0 {
		jc.RefreshRateLimit = 10 * time.Second
	}
	if jc.WaitTimeout == 0 {
		jc.WaitTimeout = time.Second
	}
	if jc.FetchTimeout == 0 {
		jc.FetchTimeout = 2 * time.Second
	}
	if !cfg.WallClockJWKS {
		jc.Now = e.iss.Now
	}
	e.jwksCfg = jc
	keys, err := jwks.New(jc)
	if err != nil {
		e.iss.Close()
		t.Fatalf("jwks.New: %v", err)
	}
	e.keys = keys

	vc := cfg.Validate
	vc.Issuers = []validate.Issuer{{Issuer: e.iss.URL(), Keys: keys}}
	vc.Audiences = []string{e.mcpURL}
	vc.TenantClaim = "tenant"
	vc.Now = e.iss.Now
	if e.val, err = validate.New(vc); err != nil {
		e.close()
		t.Fatalf("validate.New: %v", err)
	}
	e.srv, err = server.New(server.Config{
		Resource:             e.mcpURL,
		AuthorizationServers: []string{e.iss.URL()},
		Validator:            e.val,
		Scopes:               []string{hxBaseScope},
		Now:                  e.iss.Now,
	})
	if err != nil {
		e.close()
		t.Fatalf("server.New: %v", err)
	}
	e.metaURL = e.srv.ResourceMetadataURL()
	e.ts.Config.Handler = e.reads.wrap(e.srv)
	e.ts.Start()
	// An own transport, so that closing its idle connections leaves no
	// goroutine behind and no other test shares its pool.
	e.client = &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true},
		Timeout:   20 * time.Second,
	}
	t.Cleanup(e.close)
	return e
}

// close stops the HTTP server, the key source and the issuer and drops the
// client's idle connections. It is idempotent.
func (e *hxEnv) close() {
	e.closeOnce.Do(func() {
		if e.client != nil {
			e.client.CloseIdleConnections()
		}
		if e.ts != nil {
			e.ts.Close()
		}
		if e.keys != nil {
			_ = e.keys.Close()
		}
		e.iss.Close()
	})
}

// tok mints a token that is valid for the server's notes_write tool: the
// authtest defaults (ES256, typ at+jwt, tenant-a, …) with the scopes
// "mcp:tools notes:write", then opts.
func (e *hxEnv) tok(t testing.TB, opts ...authtest.TokenOption) string {
	t.Helper()
	all := append([]authtest.TokenOption{authtest.WithScopes(hxBaseScope, server.ScopeNotesWrite)}, opts...)
	return e.iss.Token(t, all...)
}

// claims returns the claims of a valid token for notes_write at the
// issuer's current time, for tokens signed with hxSignRaw.
func (e *hxEnv) claims() map[string]any {
	now := e.iss.Now()
	return map[string]any{
		"iss":       e.iss.URL(),
		"sub":       authtest.DefaultSubject,
		"aud":       e.mcpURL,
		"client_id": authtest.DefaultClientID,
		"jti":       hxRandomHex(8),
		"iat":       now.Unix(),
		"nbf":       now.Unix(),
		"exp":       now.Add(time.Hour).Unix(),
		"scope":     hxBaseScope + " " + server.ScopeNotesWrite,
		"tenant":    authtest.DefaultTenant,
	}
}

// hxCounts is a snapshot of every outbound request the server could make.
type hxCounts struct {
	jwks, metadata, introspection, attacker int64
}

func (e *hxEnv) counts(a *hxAttacker) hxCounts {
	c := hxCounts{
		jwks:          e.iss.JWKSFetches(),
		metadata:      e.iss.MetadataFetches(),
		introspection: e.iss.IntrospectionCalls(),
	}
	if a != nil {
		c.attacker = a.requests.Load()
	}
	return c
}

// hxBodyReads wraps the server handler and counts, per request, the bytes
// the handler chain read from the request body. A refused request must
// read nothing: the middleware reads the body only after the token is
// valid, so a non-zero count on a 400/401 would mean the middleware went
// on with an invalid token.
type hxBodyReads struct {
	mu sync.Mutex
	n  map[string]*atomic.Int64
}

func (b *hxBodyReads) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(hxRequestID)
		c := new(atomic.Int64)
		b.mu.Lock()
		if b.n == nil {
			b.n = map[string]*atomic.Int64{}
		}
		b.n[id] = c
		b.mu.Unlock()
		if r.Body != nil {
			r.Body = &hxCountingBody{ReadCloser: r.Body, n: c}
		}
		h.ServeHTTP(w, r)
	})
}

func (b *hxBodyReads) get(id string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.n[id]; c != nil {
		return c.Load()
	}
	return -1 // the request never reached the server
}

type hxCountingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *hxCountingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// hxReq is one HTTP request to the MCP endpoint. The zero value is a
// 2026-07-28 tools/call of notes_write without credentials.
type hxReq struct {
	method string   // default POST
	authz  []string // Authorization field lines, sent as given; nil sends none
	query  string   // raw query, appended after "?"
	host   string   // Host header; empty means the server's address
	header map[string]string
	// contentType and body replace the JSON-RPC message when body is set.
	contentType string
	body        []byte
	tool        string // default notes_write
	text        string // the note text of notes_write
}

// hxBearer returns one "Bearer <tok>" Authorization line.
func hxBearer(tok string) []string { return []string{"Bearer " + tok} }

// hxResp is the answer to an hxReq.
type hxResp struct {
	status     int
	wwwAuth    []string
	retryAfter []string
	cache      string
	body       []byte
	bodyRead   int64 // bytes the server's handlers read from the request body
	latency    time.Duration
}

// hxToolBody returns a self-contained 2026-07-28 tools/call message.
func hxToolBody(tool string, args map[string]any) []byte {
	b, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{
			"name": tool, "arguments": args,
			"_meta": map[string]any{
				"io.modelcontextprotocol/protocolVersion":    hxRevision,
				"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "hx", "version": "0"},
				"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			},
		},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// do sends r and returns the answer; a transport error fails the test.
func (e *hxEnv) do(ctx context.Context, t testing.TB, r hxReq) hxResp {
	t.Helper()
	resp, err := e.try(ctx, r)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	return resp
}

// try is do without a testing.TB, for worker goroutines.
func (e *hxEnv) try(ctx context.Context, r hxReq) (hxResp, error) {
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	tool := r.tool
	if tool == "" {
		tool = server.ToolNotesWrite
	}
	body, ct := r.body, r.contentType
	if body == nil {
		args := map[string]any{}
		if tool == server.ToolNotesWrite {
			args["text"] = r.text
		}
		body, ct = hxToolBody(tool, args), "application/json"
	}
	u := e.mcpURL
	if r.query != "" {
		u += "?" + r.query
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return hxResp{}, err
	}
	id := fmt.Sprint(e.nextID.Add(1))
	req.Header.Set(hxRequestID, id)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", hxRevision)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if r.authz != nil {
		req.Header["Authorization"] = r.authz
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	if r.host != "" {
		req.Host = r.host
	}
	start := time.Now()
	resp, err := e.client.Do(req)
	if err != nil {
		return hxResp{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	lat := time.Since(start)
	if err != nil {
		return hxResp{}, err
	}
	return hxResp{
		status:     resp.StatusCode,
		wwwAuth:    resp.Header.Values("WWW-Authenticate"),
		retryAfter: resp.Header.Values("Retry-After"),
		cache:      resp.Header.Get("Cache-Control"),
		body:       b,
		bodyRead:   e.reads.get(id),
		latency:    lat,
	}, nil
}

// whoami sends a whoami tools/call with tok as bearer token.
func (e *hxEnv) whoami(ctx context.Context, t testing.TB, tok string) hxResp {
	t.Helper()
	return e.do(ctx, t, hxReq{authz: hxBearer(tok), tool: server.ToolWhoami})
}

// notes returns the texts of tenant-a's notes, listed with a fresh valid
// token holding notes:read.
func (e *hxEnv) notes(ctx context.Context, t testing.TB) []string {
	t.Helper()
	tok := e.iss.Token(t, authtest.WithScopes(hxBaseScope, server.ScopeNotesRead))
	r := e.do(ctx, t, hxReq{authz: hxBearer(tok), tool: server.ToolNotesList})
	if r.status != http.StatusOK {
		t.Fatalf("notes_list: status %d: %s", r.status, r.body)
	}
	var rpc struct {
		Result struct {
			IsError           bool                   `json:"isError"`
			StructuredContent server.NotesListResult `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.body, &rpc); err != nil || rpc.Result.IsError {
		t.Fatalf("notes_list answer %s: %v", r.body, err)
	}
	out := []string{}
	for _, n := range rpc.Result.StructuredContent.Notes {
		out = append(out, n.Text)
	}
	return out
}

// hxWant is an exact expected answer.
type hxWant struct {
	status     int
	challenge  string // exact WWW-Authenticate; "" means the header must be absent
	body       string // exact body; "" for 200 (checked as a JSON-RPC success)
	retryAfter string // exact Retry-After; "" means absent
	// notMiddleware marks an answer of the MCP SDK handler rather than of
	// the middleware: its Cache-Control is not checked.
	notMiddleware bool
}

// Expected answers of the example server, built from its resource_metadata
// URL exactly as middleware renders them (middleware/errmap.go and the
// golden files in middleware/testdata).
func (e *hxEnv) wantOK() hxWant { return hxWant{status: http.StatusOK} }

func (e *hxEnv) wantInvalidToken() hxWant {
	return hxWant{
		status: http.StatusUnauthorized,
		challenge: `Bearer error="invalid_token", scope="` + hxBaseScope + `", resource_metadata="` + e.metaURL +
			`", error_description="The access token is invalid"`,
		body: `{"error":"invalid_token"}`,
	}
}

func (e *hxEnv) wantNoToken() hxWant {
	return hxWant{
		status:    http.StatusUnauthorized,
		challenge: `Bearer scope="` + hxBaseScope + `", resource_metadata="` + e.metaURL + `"`,
		body:      `{"error":"unauthorized"}`,
	}
}

// Fixed error_description texts of the 400 invalid_request answers.
const (
	hxDescMalformed = "Malformed Bearer authorization header"
	hxDescMultiple  = "Send exactly one Authorization header"
	hxDescQuery     = "Access tokens must not be sent in the URL query"
)

func (e *hxEnv) wantInvalidRequest(desc string) hxWant {
	return hxWant{
		status:    http.StatusBadRequest,
		challenge: `Bearer error="invalid_request", resource_metadata="` + e.metaURL + `", error_description="` + desc + `"`,
		body:      `{"error":"invalid_request"}`,
	}
}

// wantInsufficient is the 403 of a 2026-07-28 request whose operation
// needs scopes (operation-only scope list).
func (e *hxEnv) wantInsufficient(scopes ...string) hxWant {
	return hxWant{
		status: http.StatusForbidden,
		challenge: `Bearer error="insufficient_scope", scope="` + strings.Join(scopes, " ") + `", resource_metadata="` +
			e.metaURL + `", error_description="The operation requires additional scope"`,
		body: `{"error":"insufficient_scope"}`,
	}
}

// wantUnavailable is the 503 sent while no key set could be obtained: no
// challenge (the token was not judged), Retry-After of the middleware
// default (30s).
func (e *hxEnv) wantUnavailable() hxWant {
	return hxWant{status: http.StatusServiceUnavailable, body: `{"error":"temporarily_unavailable"}`, retryAfter: "30"}
}

// check compares got with w exactly, reporting every difference.
func (w hxWant) check(t testing.TB, got hxResp) {
	t.Helper()
	if err := w.diff(got); err != "" {
		t.Error(err)
	}
}

// diff returns "" if got matches w, else a description.
func (w hxWant) diff(got hxResp) string {
	var errs []string
	if got.status != w.status {
		errs = append(errs, fmt.Sprintf("status = %d, want %d", got.status, w.status))
	}
	switch {
	case w.challenge == "" && len(got.wwwAuth) != 0:
		errs = append(errs, fmt.Sprintf("WWW-Authenticate = %q, want none", got.wwwAuth))
	case w.challenge != "" && (len(got.wwwAuth) != 1 || got.wwwAuth[0] != w.challenge):
		errs = append(errs, fmt.Sprintf("WWW-Authenticate = %q\n\twant [%q]", got.wwwAuth, w.challenge))
	}
	switch {
	case w.retryAfter == "" && len(got.retryAfter) != 0:
		errs = append(errs, fmt.Sprintf("Retry-After = %q, want none", got.retryAfter))
	case w.retryAfter != "" && (len(got.retryAfter) != 1 || got.retryAfter[0] != w.retryAfter):
		errs = append(errs, fmt.Sprintf("Retry-After = %q, want [%q]", got.retryAfter, w.retryAfter))
	}
	if w.status == http.StatusOK {
		var rpc struct {
			Result *struct {
				IsError bool `json:"isError"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(got.body, &rpc); err != nil || rpc.Result == nil || rpc.Result.IsError || rpc.Error != nil {
			errs = append(errs, fmt.Sprintf("body = %.300s, want a successful tool result", got.body))
		}
	} else {
		if string(got.body) != w.body {
			errs = append(errs, fmt.Sprintf("body = %.300q, want %q", got.body, w.body))
		}
		if got.cache != "no-store" && !w.notMiddleware {
			errs = append(errs, fmt.Sprintf("Cache-Control = %q, want no-store", got.cache))
		}
	}
	return strings.Join(errs, "; ")
}

// hxAttacker is a server an attacker controls. Tokens name it in jku/x5u;
// its requests counter must stay at zero.
type hxAttacker struct {
	ts       *httptest.Server
	requests atomic.Int64
	key      jose.JSONWebKey // private ES256, kid "attacker-1"
	certDER  []byte          // self-signed certificate for key
}

func newHxAttacker(t testing.TB) *hxAttacker {
	t.Helper()
	a := &hxAttacker{key: authtest.GenerateKey(jose.ES256, "attacker-1")}
	priv := a.key.Key.(*ecdsa.PrivateKey)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "attacker.example"},
		NotBefore:    time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, priv.Public(), priv)
	if err != nil {
		t.Fatal(err)
	}
	a.certDER = der
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{a.key.Public()}})
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	a.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.requests.Add(1)
		switch r.URL.Path {
		case "/jwks":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(set)
		case "/cert.pem":
			w.Header().Set("Content-Type", "application/pem-certificate-chain")
			_, _ = w.Write(certPEM)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(a.ts.Close)
	return a
}

// publicJWK returns the attacker's public key as a JSON object.
func (a *hxAttacker) publicJWK() map[string]any {
	b, _ := json.Marshal(a.key.Public())
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	delete(m, "kid")
	return m
}

// hxSigner signs hand-assembled JWS compact tokens with a private key.
type hxSigner struct {
	key jose.JSONWebKey
}

// hxSignFormat selects the signature encoding.
type hxSignFormat int

const (
	hxSigJOSE hxSignFormat = iota // as JWS requires (ECDSA: R || S)
	hxSigDER                      // ECDSA only: ASN.1 DER, which JWS forbids
)

// sign returns header.payload.signature where header and payload are the
// exact bytes given (base64url-encoded here) and the signature is made
// with alg over the signing input.
func (s hxSigner) sign(t testing.TB, alg string, header, payload []byte) string {
	t.Helper()
	input := hxB64(header) + "." + hxB64(payload)
	return input + "." + hxB64(s.sigBytes(t, alg, []byte(input), hxSigJOSE))
}

// sigBytes signs input with alg.
func (s hxSigner) sigBytes(t testing.TB, alg string, input []byte, f hxSignFormat) []byte {
	t.Helper()
	digest := sha256.Sum256(input)
	var sig []byte
	var err error
	switch k := s.key.Key.(type) {
	case *ecdsa.PrivateKey:
		if f == hxSigDER {
			sig, err = ecdsa.SignASN1(rand.Reader, k, digest[:])
			break
		}
		var r, ss *big.Int
		if r, ss, err = ecdsa.Sign(rand.Reader, k, digest[:]); err == nil {
			sig = make([]byte, 64)
			r.FillBytes(sig[:32])
			ss.FillBytes(sig[32:])
		}
	case *rsa.PrivateKey:
		if strings.HasPrefix(alg, "PS") {
			sig, err = rsa.SignPSS(rand.Reader, k, crypto.SHA256, digest[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		} else {
			sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, digest[:])
		}
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, input)
	case []byte:
		m := hmac.New(sha256.New, k)
		m.Write(input)
		sig = m.Sum(nil)
	default:
		t.Fatalf("hxSigner: unsupported key %T", s.key.Key)
	}
	if err != nil {
		t.Fatalf("hxSigner: %v", err)
	}
	return sig
}

// hxJSON marshals v, failing the test on error.
func hxJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hxB64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// hxSegments splits a compact JWS into its three segments.
func hxSegments(t testing.TB, tok string) (h, p, s string) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d segments", len(parts))
	}
	return parts[0], parts[1], parts[2]
}

func hxRandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// hxSettleGoroutines waits, boundedly, for the goroutine count to come back
// to at most baseline+tolerance, and fails with a stack dump if it does not.
func hxSettleGoroutines(t testing.TB, baseline, tolerance int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	n := runtime.NumGoroutine()
	for n > baseline+tolerance && time.Now().Before(deadline) {
		time.Sleep(hxPoll)
		n = runtime.NumGoroutine()
	}
	if n > baseline+tolerance {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutines = %d after teardown, want <= %d (baseline %d + %d)\n%s", n, baseline+tolerance, baseline, tolerance, buf)
	}
}

// hxWaitFor polls cond every hxPoll until it is true or d has passed, and
// reports whether it became true.
func hxWaitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(hxPoll)
	}
}

// hxContext returns a context for one test, bounded so that a hung server
// fails the test instead of the suite.
func hxContext(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
