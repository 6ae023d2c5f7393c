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
	"origin_denied":          {ReasonOrigin, "", ""},
	"origin_null_denied":     {ReasonOrigin, "", ""},
	"origin_repeated_denied": {ReasonOrigin, "", ""},

	"no_token":                  {ReasonNoToken, "", ""},
	"basic_scheme":              {ReasonNoToken, "", ""},
	"dpop_scheme":               {ReasonNoToken, "", ""},
	"two_authorization_headers": {ReasonMalformedRequest, "", ""},
	"bearer_without_token":      {ReasonMalformedRequest, "", ""},
	"bearer_bad_chars":          {ReasonMalformedRequest, "", ""},
	"bearer_two_tokens":         {ReasonMalformedRequest, "", ""},
	"query_token_alone":         {ReasonMalformedRequest, "", ""},
	"query_token_and_header":    {ReasonMalformedRequest, "", ""},

	"token_expired":        {ReasonExpired, "", ""},
	"token_wrong_audience": {ReasonAudience, "", ""},
	"token_wrong_issuer":   {ReasonIssuer, "", ""},
	"token_unknown_kid":    {ReasonUnknownKey, "", ""},
	"token_garbage":        {ReasonInvalidToken, "", ""},

	"ok_get":                           {ReasonAuthorized, "", ""},
	"ok_origin_resource":               {ReasonAuthorized, "", ""},
	"ok_origin_listed":                 {ReasonAuthorized, "", ""},
	"ok_origin_any":                    {ReasonAuthorized, "", ""},
	"ok_modern_tools_call":             {ReasonAuthorized, "tools/call", "get_weather"},
	"ok_legacy_tools_call":             {ReasonAuthorized, "tools/call", "get_weather"},
	"ok_unknown_tool_method_scopes":    {ReasonAuthorized, "tools/call", Unlisted},
	"ok_unknown_method_base_scopes":    {ReasonAuthorized, "ping", ""},
	"ok_response_message_base_scopes":  {ReasonAuthorized, "", ""},
	"ok_notification":                  {ReasonAuthorized, "notifications/initialized", ""},
	"ok_hierarchy_admin_implies_write": {ReasonAuthorized, "tools/call", "push"},
	"ok_hierarchy_all":                 {ReasonAuthorized, "tools/list", ""},
	"ok_base64_mcp_name":               {ReasonAuthorized, "tools/call", Unlisted},

	"body_too_large":              {ReasonBodyTooLarge, "", ""},
	"body_batch":                  {ReasonBatch, "", ""},
	"body_not_json":               {ReasonParseError, "", ""},
	"body_empty":                  {ReasonParseError, "", ""},
	"body_not_object":             {ReasonInvalidMessage, "", ""},
	"body_duplicate_method":       {ReasonInvalidMessage, "", ""},
	"body_case_variant_method":    {ReasonInvalidMessage, "", ""},
	"body_upper_method":           {ReasonInvalidMessage, "", ""},
	"body_escaped_duplicate":      {ReasonInvalidMessage, "", ""},
	"body_long_s_params":          {ReasonInvalidMessage, "", ""},
	"body_duplicate_name":         {ReasonInvalidMessage, "", ""},
	"body_case_variant_name":      {ReasonInvalidMessage, "", ""},
	"body_method_not_string":      {ReasonInvalidMessage, "", ""},
	"body_name_not_string":        {ReasonInvalidMessage, "tools/call", ""},
	"body_invalid_utf8_name":      {ReasonInvalidMessage, "", ""},
	"body_dot_segment_uri":        {ReasonInvalidMessage, "resources/read", ""},
	"body_uri_empty_segment":      {ReasonInvalidMessage, "resources/read", ""},
	"body_uri_encoded_unreserved": {ReasonInvalidMessage, "resources/read", ""},
	"body_uri_encoded_slash":      {ReasonInvalidMessage, "resources/read", ""},
	"body_uri_exact_encoded_dot":  {ReasonInvalidMessage, "resources/read", ""},
	"body_uri_upper_scheme":       {ReasonInvalidMessage, "resources/read", ""},
	"deny_unlisted_tool":          {ReasonNotListed, "tools/call", Unlisted},

	"mismatch_method_differs":               {ReasonHeaderMismatch, "tools/call", "get_weather"},
	"mismatch_method_case":                  {ReasonHeaderMismatch, "tools/list", ""},
	"mismatch_method_missing":               {ReasonHeaderMismatch, "tools/list", ""},
	"mismatch_method_repeated":              {ReasonHeaderMismatch, "tools/list", ""},
	"mismatch_name_missing":                 {ReasonHeaderMismatch, "tools/call", "get_weather"},
	"mismatch_name_differs":                 {ReasonHeaderMismatch, "tools/call", "get_weather"},
	"mismatch_name_base64_differs":          {ReasonHeaderMismatch, "tools/call", "get_weather"},
	"mismatch_name_base64_invalid":          {ReasonHeaderMismatch, "tools/call", "get_weather"},
	"mismatch_name_uri_differs":             {ReasonHeaderMismatch, "resources/read", "file:///projects/myapp/config.json"},
	"mismatch_version_differs_meta":         {ReasonHeaderMismatch, "tools/list", ""},
	"mismatch_version_missing_in_body":      {ReasonInvalidParams, "tools/list", ""},
	"mismatch_version_header_missing":       {ReasonHeaderMismatch, "tools/list", ""},
	"mismatch_version_repeated":             {ReasonHeaderMismatch, "tools/list", ""},
	"mismatch_legacy_method_header_differs": {ReasonHeaderMismatch, "tools/call", "delete_repo"},
	"mismatch_id_object_echoed_as_null":     {ReasonHeaderMismatch, "tools/list", ""},

	"scope_base_missing_post":            {ReasonInsufficientScope, "ping", ""},
	"scope_method_missing":               {ReasonInsufficientScope, "tools/list", ""},
	"scope_tool_missing":                 {ReasonInsufficientScope, "tools/call", "delete_repo"},
	"scope_tool_not_covered_by_narrower": {ReasonInsufficientScope, "tools/call", "delete_repo"},
	"scope_all_missing":                  {ReasonInsufficientScope, "tools/call", "get_weather"},
	"scope_prompt_missing":               {ReasonInsufficientScope, "prompts/get", "secret_prompt"},
	"scope_resource_exact_missing":       {ReasonInsufficientScope, "resources/read", "file:///projects/myapp/config.json"},
	"scope_resource_longest_prefix":      {ReasonInsufficientScope, "resources/read", "file:///projects/secret/"},
	"scope_operation_only_strategy":      {ReasonInsufficientScope, "tools/call", "delete_repo"},
	"scope_realm":                        {ReasonInsufficientScope, "tools/list", ""},
	"scope_base_missing_get":             {ReasonInsufficientScope, "", ""},
	"scope_base_missing_get_modern":      {ReasonInsufficientScope, "", ""},
}

// unauthenticated are the reasons decided before a token is valid: their
// decisions carry no Principal.
var unauthenticated = map[Reason]bool{
	ReasonOrigin: true, ReasonNoToken: true, ReasonMalformedRequest: true, ReasonInvalidToken: true,
	ReasonExpired: true, ReasonNotYetValid: true, ReasonAudience: true, ReasonIssuer: true,
	ReasonSignature: true, ReasonUnknownKey: true, ReasonType: true, ReasonKeysUnavailable: true,
	ReasonNoPrincipal: true,
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
			if scoped := d.Status == 0 || d.Reason == ReasonInsufficientScope; scoped != (len(d.RequiredScopes) > 0) {
				t.Errorf("RequiredScopes = %q for reason %s", d.RequiredScopes, d.Reason)
			}
			if (len(d.MissingScopes) > 0) != (d.Reason == ReasonInsufficientScope) {
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
		{name: "signature", req: withToken([]string{"mcp"}, authtest.WrongKey()),
			want: Decision{Status: 401, Reason: ReasonSignature}, errIs: validate.ErrSignature},
		{name: "type", req: withToken([]string{"mcp"}, authtest.WithType("JWT")),
			want: Decision{Status: 401, Reason: ReasonType}, errIs: validate.ErrType},
		{name: "not yet valid", req: withToken([]string{"mcp"}, authtest.NotYetValid()),
			want: Decision{Status: 401, Reason: ReasonNotYetValid}, errIs: validate.ErrNotYetValid},
		{name: "authorized scopes and version", req: rpc(modernRev, "tools/call", "get_weather", "mcp", "tools:call", "weather:read"),
			want: Decision{Reason: ReasonAuthorized, Method: "tools/call", Name: "get_weather", ProtocolVersion: modernRev,
				RequiredScopes: []string{"mcp", "tools:call", "weather:read"}}},
		{name: "insufficient scopes", req: rpc(legacyRev, "tools/call", "delete_repo", "mcp", "tools:call"),
			want: Decision{Status: 403, Reason: ReasonInsufficientScope, Method: "tools/call", Name: "delete_repo", ProtocolVersion: legacyRev,
				RequiredScopes: []string{"mcp", "tools:call", "repo:admin"}, MissingScopes: []string{"repo:admin"}},
			errIs: ErrInsufficientScope},
		{name: "unknown method is unlisted", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"x/evil-123"}`),
			want: Decision{Reason: ReasonAuthorized, Method: Unlisted, RequiredScopes: []string{"mcp"}}},
		{name: "listed custom method is verbatim",
			mutate: func(c *Config) { c.Operations.Methods = map[string][]string{"x/custom": {"mcp"}} },
			req:    rawPost(`{"jsonrpc":"2.0","id":1,"method":"x/custom"}`),
			want:   Decision{Reason: ReasonAuthorized, Method: "x/custom", RequiredScopes: []string{"mcp"}}},
		{name: "unlisted resource", req: rawPost(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///elsewhere/x"}}`),
			want: Decision{Reason: ReasonAuthorized, Method: "resources/read", Name: Unlisted, RequiredScopes: []string{"mcp", "res:read"}}},
		{name: "unknown version", req: func(t *testing.T, f *fixture) *http.Request {
			r := withToken([]string{"mcp"})(t, f)
			r.Header.Set("MCP-Protocol-Version", "2099-01-01")
			return r
		}, want: Decision{Reason: ReasonAuthorized, ProtocolVersion: Unlisted, RequiredScopes: []string{"mcp"}}},
		{name: "repeated version", req: func(t *testing.T, f *fixture) *http.Request {
			r := withToken([]string{"other"})(t, f)
			r.Header.Add("MCP-Protocol-Version", legacyRev)
			r.Header.Add("MCP-Protocol-Version", legacyRev)
			return r
		}, want: Decision{Status: 403, Reason: ReasonInsufficientScope, ProtocolVersion: Unlisted,
			RequiredScopes: []string{"mcp"}, MissingScopes: []string{"mcp"}}, errIs: ErrInsufficientScope},
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
	authorized := Decision{Reason: ReasonAuthorized, Method: "tools/call", Name: "get_weather", ProtocolVersion: modernRev,
		RequiredScopes: []string{"mcp", "tools:call", "weather:read"}}
	adminRequired := []string{"mcp", "tools:call", "weather:read", "admin:write"}
	stepUp := Decision{Status: 403, Reason: ReasonInsufficientScope, Method: "tools/call", Name: "get_weather",
		ProtocolVersion: modernRev, RequiredScopes: adminRequired, MissingScopes: []string{"admin:write"}}
	exhausted := stepUp
	exhausted.Reason = ReasonStepUpExhausted
	tests := []struct {
		name  string
		h     http.Handler
		req   func(t *testing.T, f *fixture) *http.Request
		want  []Decision
		errIs []error
	}{
		{"require scopes step-up", admin, rpc(modernRev, "tools/call", "get_weather", "mcp", "tools:call", "weather:read"),
			[]Decision{authorized, stepUp}, []error{nil, ErrInsufficientScope}},
		{"require scopes exhausted", admin, rpc(modernRev, "tools/call", "get_weather", "mcp", "tools:call", "weather:read"),
			[]Decision{authorized, exhausted}, []error{nil, ErrStepUpExhausted}},
		{"require scopes without Handler", f.m.RequireScopes("admin:write")(echoHandler()), get(),
			[]Decision{{Status: 401, Reason: ReasonNoPrincipal}}, []error{ErrNoPrincipal}},
		{"challenge tenant", f.m.Handler(tenantCheck), rpc(modernRev, "tools/call", "get_weather", "mcp", "tools:call", "weather:read"),
			[]Decision{authorized, {Status: 403, Reason: ReasonTenant, Method: "tools/call", Name: "get_weather", ProtocolVersion: modernRev}},
			[]error{nil, ErrTenantMismatch}},
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
		checkDecision(t, rc.one(t), Decision{Status: 503, Reason: ReasonKeysUnavailable}, err)
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
