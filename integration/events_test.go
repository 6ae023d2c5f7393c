package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/otelguard"
	"github.com/mcpguard/mcpguard/proxy"
)

// eventRules are the rules of the decision-event and client tests: a
// require-scopes rule on whoami (a step-up to notes:read) and a deny rule
// on notes whose text mentions a secret (decided on the arguments).
var eventRules = []middleware.Rule{
	{Name: "whoami-needs-read", Tools: []string{server.ToolWhoami}, RequireScopes: []string{server.ScopeNotesRead}},
	{Name: "no-secrets", Tools: []string{"notes_*"}, DenyWhen: "has(mcp.args.text) && mcp.args.text.contains('secret')"},
}

// syncBuffer is a bytes.Buffer safe for concurrent use: the proxy's log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDecisionEvents: every kind of decision through mcpguard proxy (a
// refusal before the token, a step-up asked by a rule, an allowed call, a
// rule's denial) is one decision event, in the proxy's JSON log line and
// on its OpenTelemetry span, with the fields of docs/operations.md
// ("Decision events"): the user as readable fields (issuer, subject,
// client, tenant), the session, the method, name and revision, the
// arguments' SHA-256 and never the arguments, the rule, the reason and
// the outcome.
func TestDecisionEvents(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewSpanRecorder()
	tel, err := otelguard.New(otelguard.Config{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		MeterProvider:  noop.NewMeterProvider(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	served := make(chan struct{}, 16) // one per request the proxy finished serving, log line written
	e := newEnv(t, envConfig{
		viaProxy: true, stateful: true, rules: eventRules,
		proxyLog:   slog.New(slog.NewJSONHandler(&logs, nil)),
		instrument: tel.Instrument,
		wrapProxy: func(px http.Handler) http.Handler {
			h := tel.Handler(px) // the MCP endpoint only, as otelguard's Mount does
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/mcp" { // metadata, the proxy's JWK Set (fetched by the upstream)
					px.ServeHTTP(w, r)
					return
				}
				h.ServeHTTP(w, r)
				served <- struct{}{}
			})
		},
	})
	ctx := testContext(t)
	full := e.token(t, "alice", "acme", baseScope, server.ScopeNotesRead, server.ScopeNotesWrite)
	base := e.token(t, "alice", "acme", baseScope)

	// post sends body and waits until the proxy has served it (its log
	// line is written once ServeHTTP returns, maybe after the client read
	// the answer).
	requests := 0
	post := func(tok, sid, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.mcpURL, strings.NewReader(body))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", rev20251125)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		requests++
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Fatal("the proxy did not finish serving the request within 30 s")
		}
		return resp
	}
	init := post(full, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := init.Header.Get("Mcp-Session-Id")
	if init.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d, session %q", init.StatusCode, sid)
	}
	post(full, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	skip := requests

	digest := func(canonical string) string {
		sum := sha256.Sum256([]byte(canonical))
		return hex.EncodeToString(sum[:])
	}
	const secret = "top secret 7f3a"
	call := func(name, args string) string {
		return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
	}
	user := map[string]string{"issuer": e.issuer, "subject": "alice", "client_id": rawClientID, "tenant": "acme", "session": sid}
	with := func(m map[string]string) map[string]string {
		out := map[string]string{"mcp_method": "tools/call", "revision": rev20251125}
		for k, v := range user {
			out[k] = v
		}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	cases := []struct {
		name   string
		token  string
		body   string
		status int
		want   map[string]string // the log line's string fields; "" means absent
	}{
		{"no token", "", call(server.ToolWhoami, `{}`), 401, map[string]string{
			"reason": "no_token", "outcome": "no_token", "session": sid, "revision": rev20251125,
			"issuer": "", "subject": "", "client_id": "", "tenant": "", "arguments_sha256": "", "rule": "", "mcp_method": "", "name": "",
		}},
		{"step-up by a rule", base, call(server.ToolWhoami, `{}`), 403, with(map[string]string{
			"name": server.ToolWhoami, "reason": "insufficient_scope", "outcome": "insufficient_scope",
			"rule": "whoami-needs-read", "arguments_sha256": digest(`{}`),
		})},
		{"allowed", full, call(server.ToolWhoami, `{ }`), 200, with(map[string]string{
			"name": server.ToolWhoami, "reason": "authorized", "outcome": "authorized", "rule": "", "arguments_sha256": digest(`{}`),
		})},
		{"denied by a rule", full, call(server.ToolNotesWrite, `{"text" : "`+secret+`"}`), 403, with(map[string]string{
			"name": server.ToolNotesWrite, "reason": "rule_denied", "outcome": "rule_denied", "rule": "no-secrets",
			"arguments_sha256": digest(`{"text":"` + secret + `"}`),
		})},
	}
	for _, c := range cases {
		if resp := post(c.token, sid, c.body); resp.StatusCode != c.status {
			t.Fatalf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
	}

	// The log lines, in request order.
	var lines []map[string]any
	for l := range strings.Lines(logs.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if rec["msg"] == "mcp request" {
			lines = append(lines, rec)
		}
	}
	var authorize []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == "mcpguard.authorize" {
			authorize = append(authorize, s)
		}
	}
	if len(lines) != requests || len(authorize) != requests {
		t.Fatalf("%d log lines and %d spans for %d requests:\n%s", len(lines), len(authorize), requests, logs.String())
	}
	// The span attribute of each log field.
	otelKey := map[string]string{
		"issuer": "mcpguard.issuer", "subject": "user.id", "client_id": "mcpguard.client_id", "tenant": "mcpguard.tenant",
		"session": "mcp.session.id", "arguments_sha256": "mcpguard.arguments.sha256", "rule": "mcpguard.rule.name",
		"reason": "mcpguard.decision.reason", "mcp_method": "mcp.method.name", "name": "mcpguard.operation.name", "revision": "mcp.protocol.version",
	}
	for i, c := range cases {
		line, span := lines[skip+i], authorize[skip+i]
		if got := int(line["status"].(float64)); got != c.status {
			t.Errorf("%s: log status %d, want %d", c.name, got, c.status)
		}
		for k, want := range c.want {
			got, _ := line[k].(string)
			if got != want {
				t.Errorf("%s: log %s = %q, want %q", c.name, k, got, want)
			}
			if key, ok := otelKey[k]; ok {
				if got := spanAttr(span, key); got != want {
					t.Errorf("%s: span %s = %q, want %q", c.name, key, got, want)
				}
			}
		}
		outcome := "refused"
		if c.status == 200 {
			outcome = "authorized"
		}
		if got := spanAttr(span, "mcpguard.decision.outcome"); got != outcome {
			t.Errorf("%s: span outcome %q, want %q", c.name, got, outcome)
		}
		if _, ok := line["principal"]; ok {
			t.Errorf("%s: the log line still carries the length-prefixed principal: %v", c.name, line)
		}
	}
	// Never a token, never the arguments.
	var all strings.Builder
	all.WriteString(logs.String())
	for _, s := range spans.Ended() {
		for _, kv := range s.Attributes() {
			all.WriteString(kv.Value.String())
		}
	}
	for _, secretValue := range []string{full, base, secret, "top secret"} {
		if strings.Contains(all.String(), secretValue) {
			t.Errorf("a log line or span carries %q", secretValue)
		}
	}
}

func spanAttr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// TestProxyDecisionEvents: the decisions mcpguard proxy makes itself are
// decision events of the one schema (docs/operations.md, "Decision
// events"), in its JSON log line and on OpenTelemetry spans, through the
// middleware's one path (middleware.Middleware.Report): the Host check's
// refusal (before the token: only the request's revision and session
// known, nothing invented), a rate limit's 429 (after the middleware
// passed the call: one event, the refusal, on the mcpguard.authorize
// span) and a list answer that hides entries (the list request's
// "authorized" event, then one "list_filtered" event naming what it hid,
// a span mcpguard.decision under mcpguard.authorize). Exact: every field
// of each log line and every attribute of each span; never a token or
// the arguments.
func TestProxyDecisionEvents(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewSpanRecorder()
	tel, err := otelguard.New(otelguard.Config{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		MeterProvider:  noop.NewMeterProvider(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	served := make(chan struct{}, 16)
	e := newEnv(t, envConfig{
		viaProxy: true, stateful: true, rules: eventRules, proxyLists: "hide",
		rateLimit:  proxy.RateLimit{Tools: map[string]string{server.ToolWhoami: "1/24h"}},
		proxyLog:   slog.New(slog.NewJSONHandler(&logs, nil)),
		instrument: tel.Instrument,
		wrapProxy: func(px http.Handler) http.Handler {
			h := tel.Handler(px)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/mcp" {
					px.ServeHTTP(w, r)
					return
				}
				h.ServeHTTP(w, r)
				served <- struct{}{}
			})
		},
	})
	ctx := testContext(t)
	full := e.token(t, "alice", "acme", baseScope, server.ScopeNotesRead, server.ScopeNotesWrite)
	base := e.token(t, "alice", "acme", baseScope)

	// post sends body (with Host host, when set) and returns the status,
	// the request's log line and the spans that ended while it was served.
	type served1 struct {
		status int
		line   map[string]any
		spans  []sdktrace.ReadOnlySpan
	}
	nLines := 0
	post := func(tok, sid, host, body string) served1 {
		t.Helper()
		before := len(spans.Ended())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.mcpURL, strings.NewReader(body))
		if host != "" {
			req.Host = host
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", rev20251125)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Fatal("the proxy did not finish serving the request within 30 s")
		}
		var lines []map[string]any
		for l := range strings.Lines(logs.String()) {
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatalf("log line %q: %v", l, err)
			}
			if rec["msg"] == "mcp request" {
				lines = append(lines, rec)
			}
		}
		if len(lines) != nLines+1 {
			t.Fatalf("%d log lines after %d requests:\n%s", len(lines), nLines+1, logs.String())
		}
		nLines++
		out := served1{status: resp.StatusCode, line: lines[len(lines)-1]}
		for _, s := range spans.Ended()[before:] {
			if s.Name() == "mcpguard.authorize" || s.Name() == "mcpguard.decision" {
				out.spans = append(out.spans, s)
			}
		}
		if out.status == 200 && resp.Header.Get("Mcp-Session-Id") != "" && sid == "" {
			out.line["__sid"] = resp.Header.Get("Mcp-Session-Id")
		}
		return out
	}
	init := post(full, "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid, _ := init.line["__sid"].(string)
	if init.status != 200 || sid == "" {
		t.Fatalf("initialize: %d, session %q", init.status, sid)
	}
	post(full, sid, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	digest := func(canonical string) string {
		sum := sha256.Sum256([]byte(canonical))
		return hex.EncodeToString(sum[:])
	}
	const secret = "rate limited secret 51c9"
	whoami := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + server.ToolWhoami + `","arguments":{"note":"` + secret + `"}}}`
	u, _ := url.Parse(e.mcpURL)
	// The identity of alice's token, in the log line and on spans.
	who := map[string]any{"issuer": e.issuer, "subject": "alice", "client_id": rawClientID, "tenant": "acme"}
	whoSpan := map[string]any{"mcpguard.issuer": e.issuer, "user.id": "alice", "mcpguard.client_id": rawClientID, "mcpguard.tenant": "acme"}
	merge := func(ms ...map[string]any) map[string]any {
		out := map[string]any{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	route := map[string]any{"route": e.mcpURL, "http_method": "POST", "identity": "assertion", "revision": rev20251125, "session": sid}
	type spanWant struct {
		name  string
		attrs map[string]any
	}
	cases := []struct {
		name      string
		token     string
		host      string
		body      string
		status    int
		line      map[string]any // every field but time, level, msg, latency
		level     string
		spans     []spanWant // every attribute
		allowPass bool
	}{
		{
			name: "Host refused", token: full, host: "evil.example:" + u.Port(), body: whoami, status: 403, level: "WARN",
			line: merge(route, map[string]any{"reason": "host_not_allowed", "outcome": "host_not_allowed", "status": 403.0}),
			spans: []spanWant{{"mcpguard.authorize", map[string]any{
				"http.request.method": "POST", "mcpguard.decision.outcome": "refused", "mcpguard.decision.reason": "host_not_allowed",
				"http.response.status_code": int64(403), "mcp.protocol.version": rev20251125, "mcp.session.id": sid,
			}}},
		},
		{
			name: "rate limit: the first call", token: full, body: whoami, status: 200, level: "INFO", allowPass: true,
			line: merge(route, who, map[string]any{
				"mcp_method": "tools/call", "name": server.ToolWhoami, "arguments_sha256": digest(`{"note":"` + secret + `"}`),
				"reason": "authorized", "outcome": "authorized", "status": 200.0,
			}),
			spans: []spanWant{{"mcpguard.authorize", merge(whoSpan, map[string]any{
				"http.request.method": "POST", "mcpguard.decision.outcome": "authorized", "mcpguard.decision.reason": "authorized",
				"mcp.method.name": "tools/call", "mcpguard.operation.name": server.ToolWhoami, "mcp.protocol.version": rev20251125,
				"mcp.session.id": sid, "mcpguard.arguments.sha256": digest(`{"note":"` + secret + `"}`),
			})}},
		},
		{
			name: "rate limited", token: full, body: whoami, status: 429, level: "WARN",
			line: merge(route, who, map[string]any{
				"mcp_method": "tools/call", "name": server.ToolWhoami, "arguments_sha256": digest(`{"note":"` + secret + `"}`),
				"reason": "rate_limited", "outcome": "rate_limited", "status": 429.0,
			}),
			spans: []spanWant{{"mcpguard.authorize", merge(whoSpan, map[string]any{
				"http.request.method": "POST", "mcpguard.decision.outcome": "refused", "mcpguard.decision.reason": "rate_limited",
				"http.response.status_code": int64(429), "mcp.method.name": "tools/call", "mcpguard.operation.name": server.ToolWhoami,
				"mcp.protocol.version": rev20251125, "mcp.session.id": sid, "mcpguard.arguments.sha256": digest(`{"note":"` + secret + `"}`),
			})}},
		},
		{
			// base lacks notes:read (whoami's rule, notes_list) and
			// notes:write: lists: hide leaves the three out (in the server's order).
			name: "list hides", token: base, body: `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, status: 200, level: "INFO",
			line: merge(route, who, map[string]any{
				"mcp_method": "tools/list", "reason": "list_filtered", "outcome": "list_filtered", "status": 200.0,
				"rule": "whoami-needs-read", "hidden": []any{server.ToolNotesList, server.ToolNotesWrite, server.ToolWhoami}, "hidden_count": 3.0,
			}),
			spans: []spanWant{
				{"mcpguard.authorize", merge(whoSpan, map[string]any{
					"http.request.method": "POST", "mcpguard.decision.outcome": "authorized", "mcpguard.decision.reason": "authorized",
					"mcp.method.name": "tools/list", "mcp.protocol.version": rev20251125, "mcp.session.id": sid,
				})},
				{"mcpguard.decision", merge(whoSpan, map[string]any{
					"mcpguard.decision.outcome": "filtered", "mcpguard.decision.reason": "list_filtered",
					"mcp.method.name": "tools/list", "mcp.protocol.version": rev20251125, "mcp.session.id": sid,
					"mcpguard.rule.name":         "whoami-needs-read",
					"mcpguard.list.hidden":       []string{server.ToolNotesList, server.ToolNotesWrite, server.ToolWhoami},
					"mcpguard.list.hidden_count": int64(3),
				})},
			},
		},
	}
	for _, c := range cases {
		got := post(c.token, sid, c.host, c.body)
		if got.status != c.status {
			t.Fatalf("%s: status %d, want %d", c.name, got.status, c.status)
		}
		line := got.line
		if line["level"] != c.level {
			t.Errorf("%s: log level %v, want %s", c.name, line["level"], c.level)
		}
		if _, ok := line["latency"].(float64); !ok {
			t.Errorf("%s: log line without latency: %v", c.name, line)
		}
		for _, k := range []string{"time", "level", "msg", "latency"} {
			delete(line, k)
		}
		if !reflect.DeepEqual(line, c.line) {
			t.Errorf("%s: log line\n%v\nwant\n%v", c.name, line, c.line)
		}
		if len(got.spans) != len(c.spans) {
			t.Fatalf("%s: %d spans, want %d", c.name, len(got.spans), len(c.spans))
		}
		for i, want := range c.spans {
			s := got.spans[i]
			attrs := map[string]any{}
			for _, kv := range s.Attributes() {
				attrs[string(kv.Key)] = kv.Value.AsInterface()
			}
			if s.Name() != want.name || !reflect.DeepEqual(attrs, want.attrs) {
				t.Errorf("%s: span %s %v\nwant %s %v", c.name, s.Name(), attrs, want.name, want.attrs)
			}
			if i > 0 && s.Parent().SpanID() != got.spans[0].SpanContext().SpanID() {
				t.Errorf("%s: span %s is not under %s", c.name, s.Name(), got.spans[0].Name())
			}
		}
	}
	// Never a token, never the arguments.
	var all strings.Builder
	all.WriteString(logs.String())
	for _, s := range spans.Ended() {
		for _, kv := range s.Attributes() {
			all.WriteString(kv.Value.String())
		}
	}
	for _, secretValue := range []string{full, base, secret, "rate limited secret"} {
		if strings.Contains(all.String(), secretValue) {
			t.Errorf("a log line or span carries %q", secretValue)
		}
	}
}
