package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/internal/golden"
	"github.com/mcpguard/mcpguard/validate"
)

// recorder collects the decisions reported to Config.OnDecision.
type recorder struct {
	mu sync.Mutex
	ds []Decision
}

func (rc *recorder) on(_ context.Context, d Decision) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.ds = append(rc.ds, d)
}

func (rc *recorder) all() []Decision {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.ds)
}

// one returns the only decision recorded, failing the test otherwise.
func (rc *recorder) one(t *testing.T) Decision {
	t.Helper()
	ds := rc.all()
	if len(ds) != 1 {
		t.Fatalf("OnDecision called %d times, want exactly 1: %+v", len(ds), ds)
	}
	return ds[0]
}

type wantDecision struct {
	reason       Reason
	method, name string
}

// decisionWant gives the Reason, Method and Name of every answerCase. The
// scope cases run for both revisions, so their suffix is dropped.
var decisionWant = map[string]wantDecision{
	"origin_denied":          {reasonOrigin, "", ""},
	"origin_null_denied":     {reasonOrigin, "", ""},
	"origin_repeated_denied": {reasonOrigin, "", ""},

	"no_token":                  {reasonNoToken, "", ""},
	"basic_scheme":              {reasonNoToken, "", ""},
	"dpop_scheme":               {reasonNoToken, "", ""},
	"two_authorization_headers": {reasonMalformedRequest, "", ""},
	"bearer_without_token":      {reasonMalformedRequest, "", ""},
	"bearer_bad_chars":          {reasonMalformedRequest, "", ""},
	"bearer_two_tokens":         {reasonMalformedRequest, "", ""},
	"query_token_alone":         {reasonMalformedRequest, "", ""},
	"query_token_and_header":    {reasonMalformedRequest, "", ""},

	"token_expired":        {reasonExpired, "", ""},
	"token_wrong_audience": {reasonAudience, "", ""},
	"token_wrong_issuer":   {reasonIssuer, "", ""},
	"token_unknown_kid":    {reasonUnknownKey, "", ""},
	"token_garbage":        {reasonInvalidToken, "", ""},

	"ok_get":                           {reasonAuthorized, "", ""},
	"ok_origin_resource":               {reasonAuthorized, "", ""},
	"ok_origin_listed":                 {reasonAuthorized, "", ""},
	"ok_origin_any":                    {reasonAuthorized, "", ""},
	"ok_modern_tools_call":             {reasonAuthorized, "tools/call", "get_weather"},
	"ok_legacy_tools_call":             {reasonAuthorized, "tools/call", "get_weather"},
	"ok_unknown_tool_method_scopes":    {reasonAuthorized, "tools/call", unlistedLabel},
	"ok_unknown_method_base_scopes":    {reasonAuthorized, "ping", ""},
	"ok_response_message_base_scopes":  {reasonAuthorized, "", ""},
	"ok_notification":                  {reasonAuthorized, "notifications/initialized", ""},
	"ok_hierarchy_admin_implies_write": {reasonAuthorized, "tools/call", "push"},
	"ok_hierarchy_all":                 {reasonAuthorized, "tools/list", ""},
	"ok_base64_mcp_name":               {reasonAuthorized, "tools/call", unlistedLabel},

	"body_too_large":              {reasonBodyTooLarge, "", ""},
	"body_batch":                  {reasonBatch, "", ""},
	"body_not_json":               {reasonParseError, "", ""},
	"body_empty":                  {reasonParseError, "", ""},
	"body_not_object":             {reasonInvalidMessage, "", ""},
	"body_duplicate_method":       {reasonInvalidMessage, "", ""},
	"body_case_variant_method":    {reasonInvalidMessage, "", ""},
	"body_upper_method":           {reasonInvalidMessage, "", ""},
	"body_escaped_duplicate":      {reasonInvalidMessage, "", ""},
	"body_long_s_params":          {reasonInvalidMessage, "", ""},
	"body_duplicate_name":         {reasonInvalidMessage, "", ""},
	"body_case_variant_name":      {reasonInvalidMessage, "", ""},
	"body_method_not_string":      {reasonInvalidMessage, "", ""},
	"body_name_not_string":        {reasonInvalidMessage, "tools/call", ""},
	"body_invalid_utf8_name":      {reasonInvalidMessage, "", ""},
	"body_dot_segment_uri":        {reasonInvalidMessage, "resources/read", ""},
	"body_uri_empty_segment":      {reasonInvalidMessage, "resources/read", ""},
	"body_uri_encoded_unreserved": {reasonInvalidMessage, "resources/read", ""},
	"body_uri_encoded_slash":      {reasonInvalidMessage, "resources/read", ""},
	"body_uri_exact_encoded_dot":  {reasonInvalidMessage, "resources/read", ""},
	"body_uri_upper_scheme":       {reasonInvalidMessage, "resources/read", ""},
	"deny_unlisted_tool":          {reasonNotListed, "tools/call", unlistedLabel},

	"mismatch_method_differs":               {reasonHeaderMismatch, "tools/call", "get_weather"},
	"mismatch_method_case":                  {reasonHeaderMismatch, "tools/list", ""},
	"mismatch_method_missing":               {reasonHeaderMismatch, "tools/list", ""},
	"mismatch_method_repeated":              {reasonHeaderMismatch, "tools/list", ""},
	"mismatch_name_missing":                 {reasonHeaderMismatch, "tools/call", "get_weather"},
	"mismatch_name_differs":                 {reasonHeaderMismatch, "tools/call", "get_weather"},
	"mismatch_name_base64_differs":          {reasonHeaderMismatch, "tools/call", "get_weather"},
	"mismatch_name_base64_invalid":          {reasonHeaderMismatch, "tools/call", "get_weather"},
	"mismatch_name_uri_differs":             {reasonHeaderMismatch, "resources/read", "file:///projects/myapp/config.json"},
	"mismatch_version_differs_meta":         {reasonHeaderMismatch, "tools/list", ""},
	"mismatch_version_missing_in_body":      {reasonInvalidParams, "tools/list", ""},
	"mismatch_version_header_missing":       {reasonHeaderMismatch, "tools/list", ""},
	"mismatch_version_repeated":             {reasonHeaderMismatch, "tools/list", ""},
	"mismatch_legacy_method_header_differs": {reasonHeaderMismatch, "tools/call", "delete_repo"},
	"mismatch_id_object_echoed_as_null":     {reasonHeaderMismatch, "tools/list", ""},

	// Refused before the body is read: no labels, as for a GET.
	"scope_base_missing_post":            {reasonInsufficientScope, "", ""},
	"scope_method_missing":               {reasonInsufficientScope, "tools/list", ""},
	"scope_tool_missing":                 {reasonInsufficientScope, "tools/call", "delete_repo"},
	"scope_tool_not_covered_by_narrower": {reasonInsufficientScope, "tools/call", "delete_repo"},
	"scope_all_missing":                  {reasonInsufficientScope, "", ""},
	"scope_prompt_missing":               {reasonInsufficientScope, "prompts/get", "secret_prompt"},
	"scope_resource_exact_missing":       {reasonInsufficientScope, "resources/read", "file:///projects/myapp/config.json"},
	"scope_resource_longest_prefix":      {reasonInsufficientScope, "resources/read", "file:///projects/secret/"},
	"scope_operation_only_strategy":      {reasonInsufficientScope, "tools/call", "delete_repo"},
	"scope_realm":                        {reasonInsufficientScope, "tools/list", ""},
	"scope_base_missing_get":             {reasonInsufficientScope, "", ""},
	"scope_base_missing_get_modern":      {reasonInsufficientScope, "", ""},

	// Rules (rules_test.go).
	"rule_deny":                 {reasonRuleDenied, "tools/call", "get_weather"},
	"rule_require_scopes":       {reasonInsufficientScope, "tools/call", unlistedLabel},
	"rule_allow":                {reasonAuthorized, "tools/call", unlistedLabel},
	"rule_allow_stepped_up":     {reasonAuthorized, "tools/call", unlistedLabel},
	"rule_missing_claim_denies": {reasonRuleDenied, "tools/call", unlistedLabel},
}

// unauthenticated are the reasons decided before a token is valid: their
// decisions carry no Principal.
var unauthenticated = map[Reason]bool{
	reasonOrigin: true, reasonNoToken: true, reasonMalformedRequest: true, reasonInvalidToken: true,
	reasonExpired: true, reasonNotYetValid: true, reasonAudience: true, reasonIssuer: true,
	reasonSignature: true, reasonUnknownKey: true, reasonType: true, reasonKeysUnavailable: true,
	reasonNoPrincipal: true,
}

// TestDecisions replays every answer of TestAnswers with OnDecision set:
// exactly one call per request, reporting the status written (0 when
// authorized), the reason and the operation labels; and the response is
// the same golden bytes.
func TestDecisions(t *testing.T) {
	shared := newFixture(t, nil)
	for _, tc := range answerCases() {
		t.Run(tc.name, func(t *testing.T) {
			key := strings.TrimSuffix(strings.TrimSuffix(tc.name, "_20251125"), "_20260728")
			want, ok := decisionWant[key]
			if !ok {
				t.Fatalf("no decisionWant entry for %s", key)
			}
			rc := &recorder{}
			f := shared.with(t, func(c *Config) {
				if tc.mutate != nil {
					tc.mutate(c)
				}
				c.OnDecision = rc.on
			})
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n := len(rc.all()); n != 1 {
					t.Errorf("next ran after %d decisions, want 1", n)
				}
				echoHandler().ServeHTTP(w, r)
			})
			rec := httptest.NewRecorder()
			f.m.Handler(next).ServeHTTP(rec, tc.req(t, f))
			golden.Check(t, tc.name+".golden", golden.DumpResponse(rec))
			d := rc.one(t)
			wantStatus := rec.Code
			if rec.Code == http.StatusOK {
				wantStatus = 0
			}
			if d.Status != wantStatus || d.Reason != want.reason || d.Method != want.method || d.Name != want.name {
				t.Errorf("decision = {%d %s %q %q}, want {%d %s %q %q}",
					d.Status, d.Reason, d.Method, d.Name, wantStatus, want.reason, want.method, want.name)
			}
			if got, want := d.Principal == nil, unauthenticated[d.Reason]; got != want {
				t.Errorf("Principal nil = %t, want %t", got, want)
			}
			if (d.Err == nil) != (d.Status == 0) {
				t.Errorf("Err = %v with status %d", d.Err, d.Status)
			}
			if scoped := d.Status == 0 || d.Reason == reasonInsufficientScope; scoped != (len(d.RequiredScopes) > 0) {
				t.Errorf("RequiredScopes = %q for reason %s", d.RequiredScopes, d.Reason)
			}
			if (len(d.MissingScopes) > 0) != (d.Reason == reasonInsufficientScope) {
				t.Errorf("MissingScopes = %q for reason %s", d.MissingScopes, d.Reason)
			}
		})
	}
	// Every case has an expectation and every expectation a case.
	names := map[string]bool{}
	for _, tc := range answerCases() {
		names[strings.TrimSuffix(strings.TrimSuffix(tc.name, "_20251125"), "_20260728")] = true
	}
	for k := range decisionWant {
		if !names[k] {
			t.Errorf("decisionWant has %s, which no answer case uses", k)
		}
	}
}

// TestDecisionDetails checks the fields TestDecisions does not pin: the
// finer token reasons, scopes, protocol versions and label bounds.
func TestDecisionDetails(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		name   string
		mutate func(*Config)
		req    func(t *testing.T, f *fixture) *http.Request
		want   Decision // Principal and Err are not compared
		errIs  error
	}{
		{name: "signature", req: withToken([]string{"mcp"}, authtest.Token{ForeignKey: true}),
			want: Decision{Status: 401, Reason: reasonSignature}, errIs: validate.Error{Reason: "signature"}},
		{name: "type", req: withToken([]string{"mcp"}, authtest.Token{Typ: "JWT"}),
			want: Decision{Status: 401, Reason: reasonType}, errIs: validate.Error{Reason: "type"}},
		{name: "not yet valid", req: withToken([]string{"mcp"}, authtest.Token{NotBefore: time.Hour, Lifetime: 2 * time.Hour}),
			want: Decision{Status: 401, Reason: reasonNotYetValid}, errIs: validate.Error{Reason: "not_yet_valid"}},
		{name: "authorized scopes and version", req: rpc(modernRev, "tools/call", "get_weather", "mcp", "tools:call", "weather:read"),
			want: Decision{Reason: reasonAuthorized, Method: "tools/call", Name: "get_weather", ProtocolVersion: modernRev,
				RequiredScopes: []string{"mcp", "tools:call", "weather:read"}}},
		{name: "insufficient scopes", req: rpc(legacyRev, "tools/call", "delete_repo", "mcp", "tools:call"),
			want: Decision{Status: 403, Reason: reasonInsufficientScope, Method: "tools/call", Name: "delete_repo", ProtocolVersion: legacyRev,
				RequiredScopes: []string{"mcp", "tools:call", "repo:admin"}, MissingScopes: []string{"repo:admin"}},
			errIs: errInsufficientScope},
		{name: "unknown method is unlisted", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"x/evil-123"}`),
			want: Decision{Reason: reasonAuthorized, Method: unlistedLabel, RequiredScopes: []string{"mcp"}}},
		{name: "listed custom method is verbatim",
			mutate: func(c *Config) { c.Operations.Methods = map[string][]string{"x/custom": {"mcp"}} },
			req:    rawPost(`{"jsonrpc":"2.0","id":1,"method":"x/custom"}`),
			want:   Decision{Reason: reasonAuthorized, Method: "x/custom", RequiredScopes: []string{"mcp"}}},
		{name: "unlisted resource", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///elsewhere/x"}}`),
			want: Decision{Reason: reasonAuthorized, Method: "resources/read", Name: unlistedLabel, RequiredScopes: []string{"mcp", "res:read"}}},
		{name: "unknown version", req: func(t *testing.T, f *fixture) *http.Request {
			r := withToken([]string{"mcp"})(t, f)
			r.Header.Set("MCP-Protocol-Version", "2099-01-01")
			return r
		}, want: Decision{Reason: reasonAuthorized, ProtocolVersion: unlistedLabel, RequiredScopes: []string{"mcp"}}},
		{name: "repeated version", req: func(t *testing.T, f *fixture) *http.Request {
			r := withToken([]string{"other"})(t, f)
			r.Header.Add("MCP-Protocol-Version", legacyRev)
			r.Header.Add("MCP-Protocol-Version", legacyRev)
			return r
		}, want: Decision{Status: 403, Reason: reasonInsufficientScope, ProtocolVersion: unlistedLabel,
			RequiredScopes: []string{"mcp"}, MissingScopes: []string{"mcp"}}, errIs: errInsufficientScope},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := &recorder{}
			g := f.with(t, func(c *Config) {
				if tt.mutate != nil {
					tt.mutate(c)
				}
				c.OnDecision = rc.on
			})
			g.m.Handler(echoHandler()).ServeHTTP(httptest.NewRecorder(), tt.req(t, g))
			checkDecision(t, rc.one(t), tt.want, tt.errIs)
		})
	}
}

// checkDecision compares d with want, except Principal and Err, which
// must match errIs (nil: no error).
func checkDecision(t *testing.T, d, want Decision, errIs error) {
	t.Helper()
	if d.Status != want.Status || d.Reason != want.Reason || d.Method != want.Method || d.Name != want.Name ||
		d.ProtocolVersion != want.ProtocolVersion || !slices.Equal(d.RequiredScopes, want.RequiredScopes) ||
		!slices.Equal(d.MissingScopes, want.MissingScopes) {
		t.Errorf("decision =\n %s\nwant\n %s", fmtDecision(d), fmtDecision(want))
	}
	if (errIs == nil) != (d.Err == nil) || !errors.Is(d.Err, errIs) {
		t.Errorf("Err = %v, want errors.Is %v", d.Err, errIs)
	}
}

func fmtDecision(d Decision) string {
	return fmt.Sprintf("{%d %s method=%q name=%q version=%q required=%q missing=%q}",
		d.Status, d.Reason, d.Method, d.Name, d.ProtocolVersion, d.RequiredScopes, d.MissingScopes)
}

// TestDecisionRoutes: RequireScopes and Challenge report their refusals,
// with the labels Handler found; the metadata handler and Authenticate
// report nothing.
func TestDecisionRoutes(t *testing.T) {
	rc := &recorder{}
	f := newFixture(t, func(c *Config) { c.OnDecision = rc.on; c.StepUpLimit = 1 })
	tenantCheck := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := CheckTenant(r.Context(), "other-tenant"); err != nil {
			f.m.Challenge(w, r, err)
		}
	})
	admin := f.m.Handler(f.m.RequireScopes("admin:write")(echoHandler()))
	authorized := Decision{Reason: reasonAuthorized, Method: "tools/call", Name: "get_weather", ProtocolVersion: modernRev,
		RequiredScopes: []string{"mcp", "tools:call", "weather:read"}}
	adminRequired := []string{"mcp", "tools:call", "weather:read", "admin:write"}
	stepUp := Decision{Status: 403, Reason: reasonInsufficientScope, Method: "tools/call", Name: "get_weather",
		ProtocolVersion: modernRev, RequiredScopes: adminRequired, MissingScopes: []string{"admin:write"}}
	exhausted := stepUp
	exhausted.Reason = reasonStepUpExhausted
	tests := []struct {
		name  string
		h     http.Handler
		req   func(t *testing.T, f *fixture) *http.Request
		want  []Decision
		errIs []error
	}{
		{"require scopes step-up", admin, rpc(modernRev, "tools/call", "get_weather", "mcp", "tools:call", "weather:read"),
			[]Decision{authorized, stepUp}, []error{nil, errInsufficientScope}},
		{"require scopes exhausted", admin, rpc(modernRev, "tools/call", "get_weather", "mcp", "tools:call", "weather:read"),
			[]Decision{authorized, exhausted}, []error{nil, errStepUpExhausted}},
		{"require scopes without Handler", f.m.RequireScopes("admin:write")(echoHandler()), get(),
			[]Decision{{Status: 401, Reason: reasonNoPrincipal}}, []error{errNoPrincipal}},
		{"challenge tenant", f.m.Handler(tenantCheck), rpc(modernRev, "tools/call", "get_weather", "mcp", "tools:call", "weather:read"),
			[]Decision{authorized, {Status: 403, Reason: reasonTenant, Method: "tools/call", Name: "get_weather", ProtocolVersion: modernRev}},
			[]error{nil, errTenantMismatch}},
		{"metadata handler", f.m.MetadataHandler(), func(*testing.T, *fixture) *http.Request {
			return httptest.NewRequest(http.MethodGet, metadataURL, nil)
		}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc.mu.Lock()
			rc.ds = nil
			rc.mu.Unlock()
			tt.h.ServeHTTP(httptest.NewRecorder(), tt.req(t, f))
			got := rc.all()
			if len(got) != len(tt.want) {
				t.Fatalf("%d decisions, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				checkDecision(t, got[i], tt.want[i], tt.errIs[i])
			}
		})
	}
	rc.ds = nil
	r := withToken([]string{"mcp"})(t, f)
	if _, err := f.m.Authenticate(r); err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if n := len(rc.all()); n != 0 {
		t.Errorf("Authenticate reported %d decisions, want 0", n)
	}
}

// TestDecisionUnavailable: 503 answers report keys_unavailable, with the
// cause.
func TestDecisionUnavailable(t *testing.T) {
	for _, err := range []error{validate.ErrKeysUnavailable, context.Canceled, context.DeadlineExceeded} {
		rc := &recorder{}
		m := newFake(t, fakeValidator{err: fmt.Errorf("fetch: %w", err)}, func(c *Config) { c.OnDecision = rc.on })
		r := httptest.NewRequest(http.MethodGet, resource, nil)
		r.Header.Set("Authorization", "Bearer abc")
		m.Handler(http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), r)
		checkDecision(t, rc.one(t), Decision{Status: 503, Reason: reasonKeysUnavailable}, err)
	}
}

// TestDecisionAllocs: reporting adds no allocation to an authorized
// request, and a nil OnDecision costs nothing.
func TestDecisionAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	fv := fakeValidator{claims: fakeClaims("mcp")}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	run := func(on func(context.Context, Decision)) float64 {
		m := newFake(t, fv, func(c *Config) { c.OnDecision = on })
		h := m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		w := &discardWriter{h: http.Header{}}
		rb := &rewindBody{}
		r := httptest.NewRequest(http.MethodPost, resource, rb)
		r.Header.Set("Authorization", "Bearer x")
		r.ContentLength = int64(len(body))
		return testing.AllocsPerRun(200, func() {
			rb.Reset([]byte(body))
			h.ServeHTTP(w, r)
		})
	}
	var n int
	off, on := run(nil), run(func(context.Context, Decision) { n++ })
	if on != off {
		t.Errorf("allocs per request: %v with OnDecision, %v without", on, off)
	}
	if n == 0 {
		t.Error("OnDecision was not called")
	}
}

// BenchmarkDecision is op=tools_call_discard of BenchmarkMiddleware
// (verified-token cache on) without and with an OnDecision hook that
// counts decisions by reason, method and tool.
func BenchmarkDecision(b *testing.B) {
	env := newBenchEnv(b)
	v := env.validator(b, 0)
	type label struct{ reason, method, name string }
	counts := map[label]int{}
	for _, c := range []struct {
		name string
		on   func(context.Context, Decision)
	}{
		{"hook=nil", nil},
		{"hook=counter", func(_ context.Context, d Decision) { counts[label{string(d.Reason), d.Method, d.Name}]++ }},
	} {
		cfg := testConfig(v, env.iss)
		cfg.OnDecision = c.on
		m, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		h := m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		post := rpcRequest(modernRev, "tools/call", "get_weather", env.token)
		body := &rewindBody{}
		post.Body = body
		post.ContentLength = int64(len(env.body))
		w := &discardWriter{h: http.Header{}}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				body.Reset(env.body)
				h.ServeHTTP(w, post)
			}
		})
	}
	if len(counts) > 1 {
		b.Errorf("counted %v", counts)
	}
}

// TestContextWithDecision: the decision reported to OnDecision is also
// recorded where the request's context asks, for the next handler while
// it runs and for the caller once Handler returns, with the JSON-RPC id
// an answer may echo (Decision.ID).
func TestContextWithDecision(t *testing.T) {
	long := `"` + strings.Repeat("a", 300) + `"`
	tests := []struct {
		name       string
		auth       string
		body       string
		wantReason Reason
		wantStatus int
		wantID     string // "" for nil
		wantNext   bool
	}{
		{name: "authorized", auth: "Bearer x", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
			wantReason: reasonAuthorized, wantID: "7", wantNext: true},
		{name: "string id as spelled", auth: "Bearer x", body: `{"jsonrpc":"2.0","id":"\u0061","method":"tools/list"}`,
			wantReason: reasonAuthorized, wantID: `"\u0061"`, wantNext: true},
		{name: "id too long", auth: "Bearer x", body: `{"jsonrpc":"2.0","id":` + long + `,"method":"tools/list"}`,
			wantReason: reasonAuthorized, wantNext: true},
		{name: "notification", auth: "Bearer x", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			wantReason: reasonAuthorized, wantNext: true},
		{name: "no token", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
			wantReason: reasonNoToken, wantStatus: http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := &recorder{}
			m := newFake(t, fakeValidator{claims: fakeClaims("mcp")}, func(c *Config) { c.OnDecision = rc.on })
			var got Decision
			ran := false
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ran = true
				p, _ := PrincipalFromContext(r.Context())
				if got.Reason != tt.wantReason || got.Principal != p {
					t.Errorf("in next: Reason %q, Principal %p; want %q, %p", got.Reason, got.Principal, tt.wantReason, p)
				}
			})
			r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(tt.body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			r = r.WithContext(ContextWithDecision(r.Context(), &got))
			m.Handler(next).ServeHTTP(httptest.NewRecorder(), r)
			if ran != tt.wantNext {
				t.Errorf("next ran = %t, want %t", ran, tt.wantNext)
			}
			if got.Reason != tt.wantReason || got.Status != tt.wantStatus || string(got.ID) != tt.wantID || (got.ID == nil) != (tt.wantID == "") {
				t.Errorf("recorded {%q %d %q}, want {%q %d %q}", got.Reason, got.Status, got.ID, tt.wantReason, tt.wantStatus, tt.wantID)
			}
			if d := rc.one(t); d.Reason != got.Reason || d.Status != got.Status || string(d.ID) != string(got.ID) || d.Principal != got.Principal {
				t.Errorf("OnDecision got {%q %d %q}, recorded {%q %d %q}", d.Reason, d.Status, d.ID, got.Reason, got.Status, got.ID)
			}
		})
	}
}
