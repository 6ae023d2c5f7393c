package otelguard_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/otelguard"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

const resource = "http://127.0.0.1:1/mcp"

// env is a Guard instrumented with an in-memory meter and tracer.
type env struct {
	iss    *authtest.Issuer
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	tel    *otelguard.Telemetry
	mux    *http.ServeMux
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{iss: authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource}), reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	e.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(e.spans))
	tel, err := otelguard.New(otelguard.Config{
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader)),
		TracerProvider: e.tp,
		Propagator:     propagation.TraceContext{},
		Now:            e.iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.tel = tel
	cfg := mcpguard.Config{
		Resource:    resource,
		Issuers:     []string{e.iss.URL},
		Scopes:      []string{"mcp"},
		Operations:  middleware.OperationPolicy{Tools: map[string][]string{"delete_repo": {"repo:admin"}}},
		Validate:    validate.Config{Now: e.iss.Now},
		JWKS:        jwks.Config{Now: e.iss.Now, RefreshRateLimit: 1},
		Middleware:  middleware.Config{StepUpLimit: 2, Now: e.iss.Now},
		WaitForKeys: 5e9,
	}
	tel.Instrument(&cfg)
	g, err := mcpguard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	// WaitForKeys returns once the first key set is published; the
	// refresh observer hears of it just after (jwks.RefreshObserver), so
	// the tests wait, bounded, until the key-set gauges report it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, ok := e.collect(t)["mcpguard.jwks.keys"]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first key refresh was not observed within 10 s")
		}
	}
	e.mux = http.NewServeMux()
	tel.Mount(e.mux, g, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	return e
}

// call sends a tools/call of tool with token (none if "") and returns the status.
func (e *env) call(t *testing.T, tool, token string, header http.Header) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		r.Header[k] = v
	}
	rec := httptest.NewRecorder()
	e.mux.ServeHTTP(rec, r)
	return rec.Code
}

// collect returns every data point by metric name.
func (e *env) collect(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := e.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelguard.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// sum returns the value of the counter point whose attributes include want.
func sum(t *testing.T, data metricdata.Aggregation, want ...attribute.KeyValue) int64 {
	t.Helper()
	s, ok := data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("not an int64 sum: %T", data)
	}
	var n int64
	for _, dp := range s.DataPoints {
		if hasAll(dp.Attributes, want) {
			n += dp.Value
		}
	}
	return n
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	good := e.iss.Token(t, authtest.Token{Scopes: []string{"mcp"}})
	for range 2 { // the second is a cache hit
		if code := e.call(t, "whoami", good, nil); code != http.StatusNoContent {
			t.Fatalf("authorized call: %d", code)
		}
	}
	if code := e.call(t, "whoami", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	for range 3 { // limit 2: two challenges, then a terminal 403
		if code := e.call(t, "delete_repo", good, nil); code != http.StatusForbidden {
			t.Fatalf("delete_repo: %d", code)
		}
	}
	if code := e.call(t, "whoami", e.iss.Token(t, authtest.Expired()), nil); code != http.StatusUnauthorized {
		t.Fatalf("expired: %d", code)
	}

	m := e.collect(t)
	a := attribute.String
	tools := a("mcp.method.name", "tools/call")
	for _, tt := range []struct {
		name   string
		metric string
		attrs  []attribute.KeyValue
		want   int64
	}{
		{"authorized", "mcpguard.decisions", []attribute.KeyValue{a("mcpguard.decision.outcome", "authorized"), a("mcpguard.decision.reason", "authorized"), tools, a("mcpguard.operation.name", "(unlisted)"), a("mcp.protocol.version", "2025-11-25")}, 2},
		{"no token", "mcpguard.decisions", []attribute.KeyValue{a("mcpguard.decision.outcome", "refused"), a("mcpguard.decision.reason", "no_token"), attribute.Int("http.response.status_code", 401)}, 1},
		{"challenges", "mcpguard.decisions", []attribute.KeyValue{a("mcpguard.decision.reason", "insufficient_scope"), a("mcpguard.operation.name", "delete_repo")}, 2},
		{"exhausted", "mcpguard.decisions", []attribute.KeyValue{a("mcpguard.decision.reason", "step_up_exhausted"), attribute.Int("http.response.status_code", 403)}, 1},
		{"expired", "mcpguard.decisions", []attribute.KeyValue{a("mcpguard.decision.reason", "expired")}, 1},
		{"step-up challenges", "mcpguard.stepup.challenges", []attribute.KeyValue{tools, a("mcpguard.operation.name", "delete_repo")}, 2},
		{"step-up terminal", "mcpguard.stepup.exhausted", []attribute.KeyValue{tools, a("mcpguard.operation.name", "delete_repo")}, 1},
		{"cache hits", "mcpguard.token_cache.lookups", []attribute.KeyValue{a("mcpguard.token_cache.result", "hit")}, 4},
		{"cache misses", "mcpguard.token_cache.lookups", []attribute.KeyValue{a("mcpguard.token_cache.result", "miss")}, 2},
		{"refresh", "mcpguard.jwks.refreshes", []attribute.KeyValue{a("mcpguard.issuer", e.iss.URL), a("mcpguard.refresh.outcome", "success"), a("mcpguard.refresh.trigger", "background")}, 1},
	} {
		if got := sum(t, m[tt.metric], tt.attrs...); got != tt.want {
			t.Errorf("%s: %s%v = %d, want %d", tt.name, tt.metric, tt.attrs, got, tt.want)
		}
	}
	h, ok := m["mcpguard.validation.duration"].(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("validation.duration: %T", m["mcpguard.validation.duration"])
	}
	var n uint64
	for _, dp := range h.DataPoints {
		n += dp.Count
		if _, ok := dp.Attributes.Value("mcpguard.token_cache"); !ok {
			t.Errorf("validation point without cache attribute: %v", dp.Attributes)
		}
	}
	if n != 6 {
		t.Errorf("validation.duration count = %d, want 6", n)
	}
	keys, ok := m["mcpguard.jwks.keys"].(metricdata.Gauge[int64])
	if !ok {
		t.Fatalf("jwks.keys: %T", m["mcpguard.jwks.keys"])
	}
	if len(keys.DataPoints) != 1 || keys.DataPoints[0].Value < 1 {
		t.Errorf("jwks.keys = %+v", keys.DataPoints)
	}
	age, ok := m["mcpguard.jwks.age"].(metricdata.Gauge[float64])
	if !ok {
		t.Fatalf("jwks.age: %T", m["mcpguard.jwks.age"])
	}
	if len(age.DataPoints) != 1 || age.DataPoints[0].Value != 0 {
		t.Errorf("jwks.age = %+v, want 0 on the pinned clock", age.DataPoints)
	}
	e.iss.Advance(90e9)
	if age := e.collect(t)["mcpguard.jwks.age"].(metricdata.Gauge[float64]); age.DataPoints[0].Value != 90 {
		t.Errorf("jwks.age after 90s = %v", age.DataPoints[0].Value)
	}

	// No label anywhere is a subject, a client id or a token.
	for name, data := range e.collect(t) {
		for _, set := range attributeSets(data) {
			for _, kv := range set.ToSlice() {
				v := kv.Value.String()
				if strings.Contains(v, "user-1") || strings.Contains(v, good) || kv.Key == "mcpguard.client_id" || strings.HasPrefix(string(kv.Key), "enduser") {
					t.Errorf("%s has attribute %s=%s", name, kv.Key, v)
				}
			}
		}
	}
}

func attributeSets(data metricdata.Aggregation) []attribute.Set {
	var out []attribute.Set
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Gauge[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Gauge[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	}
	return out
}

func TestTraces(t *testing.T) {
	e := newEnv(t)
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	hdr := http.Header{"Traceparent": {traceparent}}
	good := e.iss.Token(t, authtest.Token{Scopes: []string{"mcp"}})
	if code := e.call(t, "whoami", good, hdr); code != http.StatusNoContent {
		t.Fatalf("authorized: %d", code)
	}
	// A token under a kid the set lacks starts an on-demand refresh, a child
	// of the decision span.
	if code := e.call(t, "whoami", e.iss.Token(t, authtest.Token{ForeignKey: true, KID: "unknown-kid"}), hdr); code != http.StatusUnauthorized {
		t.Fatalf("unknown kid: %d", code)
	}
	// The on-demand refresh's span ends just after its waiters wake.
	var byName map[string][]sdktrace.ReadOnlySpan
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		byName = map[string][]sdktrace.ReadOnlySpan{}
		for _, s := range e.spans.Ended() {
			byName[s.Name()] = append(byName[s.Name()], s)
		}
		if len(byName["mcpguard.jwks.refresh"]) >= 2 || time.Now().After(deadline) {
			break
		}
	}
	auth := byName["mcpguard.authorize"]
	if len(auth) != 2 {
		t.Fatalf("authorize spans = %d, want 2 (spans: %v)", len(auth), names(e.spans.Ended()))
	}
	for _, s := range auth {
		if s.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent().SpanID().String() != "00f067aa0ba902b7" || !s.Parent().IsRemote() {
			t.Errorf("authorize span not linked to the incoming trace: trace %s parent %s", s.SpanContext().TraceID(), s.Parent().SpanID())
		}
		// The user is the decision event's user.id (docs/operations.md,
		// "Decision events"); never a token, and no other attribute.
		for _, kv := range s.Attributes() {
			if v := kv.Value.String(); strings.Contains(v, good) || (kv.Key != "user.id" && strings.Contains(v, "user-1")) {
				t.Errorf("span attribute %s=%s", kv.Key, v)
			}
		}
	}
	if got := attr(auth[0], "user.id"); got != "user-1" {
		t.Errorf("authorized span user.id = %q, want the subject", got)
	}
	if got := attr(auth[0], "mcpguard.decision.reason"); got != "authorized" {
		t.Errorf("first span reason = %q", got)
	}
	if got := attr(auth[0], "mcpguard.client_id"); got == "" {
		t.Error("authorized span has no client id")
	}
	if got := attr(auth[1], "mcpguard.decision.reason"); got != "unknown_key" {
		t.Errorf("second span reason = %q", got)
	}
	var onDemand []sdktrace.ReadOnlySpan
	for _, s := range byName["mcpguard.jwks.refresh"] {
		if attr(s, "mcpguard.refresh.trigger") == "on_demand" {
			onDemand = append(onDemand, s)
		} else if s.Parent().IsValid() {
			t.Errorf("background refresh has a parent %v", s.Parent())
		}
	}
	if len(onDemand) != 1 || onDemand[0].Parent().SpanID() != auth[1].SpanContext().SpanID() {
		t.Errorf("on-demand refresh spans = %v, want one child of the unknown-kid decision", names(onDemand))
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func TestIntrospection(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	tel, err := otelguard.New(otelguard.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	id, secret := iss.IntrospectionClientID, iss.IntrospectionSecret
	in, err := introspect.New(introspect.Config{
		Issuer: iss.URL, Endpoint: iss.IntrospectionURL, Audiences: []string{resource},
		ClientID: id, ClientSecret: secret, Now: iss.Now, Observer: tel,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	if _, err := in.Validate(ctx, iss.Token(t, authtest.Token{Opaque: true})); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	if _, err := in.Validate(ctx, "not-a-token-the-as-knows"); err == nil {
		t.Fatal("unknown token accepted")
	}
	parent.End()
	var intro []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == "mcpguard.introspect" {
			intro = append(intro, s)
		}
	}
	if len(intro) != 2 || intro[0].Parent().SpanID() != parent.SpanContext().SpanID() || intro[0].SpanKind() != trace.SpanKindClient {
		t.Fatalf("introspect spans = %v", names(intro))
	}
	outcomes := []string{attr(intro[0], "mcpguard.introspection.outcome"), attr(intro[1], "mcpguard.introspection.outcome")}
	if !slices.Equal(outcomes, []string{"active", "inactive"}) {
		t.Errorf("outcomes = %v", outcomes)
	}
	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	var calls metricdata.Aggregation
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "mcpguard.introspection.calls" {
			calls = m.Data
		}
	}
	for _, o := range []string{"active", "inactive"} {
		if got := sum(t, calls, attribute.String("mcpguard.issuer", iss.URL), attribute.String("mcpguard.introspection.outcome", o)); got != 1 {
			t.Errorf("introspection.calls{%s} = %d", o, got)
		}
	}
}

// TestNoAllocations: recording a decision or a validation with a known
// label set, outside a traced request, allocates nothing, so OnDecision
// and Observer add no allocation to the hot path.
func TestNoAllocations(t *testing.T) {
	tel, err := otelguard.New(otelguard.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d := middleware.Decision{Reason: middleware.Reason("authorized"), Method: "tools/call", Name: "get_weather", ProtocolVersion: "2026-07-28"}
	o := validate.Observation{Cache: "hit", Duration: 1000}
	tel.OnDecision(ctx, d)
	tel.ObserveValidation(ctx, o)
	if n := testing.AllocsPerRun(100, func() { tel.OnDecision(ctx, d) }); n != 0 {
		t.Errorf("OnDecision allocates %v", n)
	}
	if n := testing.AllocsPerRun(100, func() { tel.ObserveValidation(ctx, o) }); n != 0 {
		t.Errorf("ObserveValidation allocates %v", n)
	}
}

// TestDecisionEvent: a decision of a request not served through
// Telemetry.Handler is the span event "mcpguard.decision" on the
// request's recording span, with the attributes of the decision span
// (docs/operations.md, "Decision events"); the metrics never carry the
// user, client, session, digest or rule.
func TestDecisionEvent(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	tel, err := otelguard.New(otelguard.Config{TracerProvider: tp, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	d := middleware.Decision{
		Status: 403, Reason: middleware.Reason("rule_denied"), Method: "tools/call", Name: "delete_repo", ProtocolVersion: "2026-07-28",
		Session: "sess-1", ArgumentsSHA256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", Rule: "no-deletes",
		Principal: &middleware.Principal{Issuer: "https://as.example", Subject: "alice", ClientID: "app-1", Tenant: "acme"},
	}
	tel.OnDecision(ctx, d)
	span.End()
	tel.OnDecision(context.Background(), d) // no span: nothing to add to, nothing fails

	ended := spans.Ended()
	if len(ended) != 1 || len(ended[0].Events()) != 1 {
		t.Fatalf("spans %v, want one with one event", names(ended))
	}
	ev := ended[0].Events()[0]
	if ev.Name != "mcpguard.decision" {
		t.Errorf("event %q", ev.Name)
	}
	got := map[string]string{}
	for _, kv := range ev.Attributes {
		got[string(kv.Key)] = kv.Value.String()
	}
	want := map[string]string{
		"mcpguard.decision.outcome": "refused", "mcpguard.decision.reason": "rule_denied", "http.response.status_code": "403",
		"mcp.method.name": "tools/call", "mcpguard.operation.name": "delete_repo", "mcp.protocol.version": "2026-07-28",
		"mcpguard.issuer": "https://as.example", "user.id": "alice", "mcpguard.client_id": "app-1", "mcpguard.tenant": "acme",
		"mcp.session.id": "sess-1", "mcpguard.arguments.sha256": d.ArgumentsSHA256, "mcpguard.rule.name": "no-deletes",
	}
	if !maps.Equal(got, want) {
		t.Errorf("event attributes\n got %v\nwant %v", got, want)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			s, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range s.DataPoints {
				for _, kv := range dp.Attributes.ToSlice() {
					switch kv.Key {
					case "user.id", "mcpguard.client_id", "mcpguard.tenant", "mcp.session.id", "mcpguard.arguments.sha256", "mcpguard.rule.name":
						t.Errorf("metric %s carries %s", m.Name, kv.Key)
					}
				}
			}
		}
	}
}
