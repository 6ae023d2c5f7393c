package middleware

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkMiddlewareStepUpPending: op=get_discard with the validator
// cache on, while 100 other principals have step-ups pending, so the hot
// path hashes the principal and looks in its shard (issue #11: no store
// call, no allocation beyond the op=get_discard case).
func BenchmarkMiddlewareStepUpPending(b *testing.B) {
	env := newBenchEnv(b)
	v := env.validator(b, 0)
	m, err := New(testConfig(v, env.iss))
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		r := httptest.NewRequest(http.MethodGet, resource, nil)
		p := &Principal{Issuer: env.iss.URL, Subject: fmt.Sprint("other-", i), Scopes: []string{"mcp"}}
		m.RequireScopes("admin")(noopHandler{}).ServeHTTP(httptest.NewRecorder(), r.WithContext(ContextWithPrincipal(r.Context(), p)))
	}
	if m.pending.empty() {
		b.Fatal("nothing pending")
	}
	h := m.Handler(noopHandler{})
	get := httptest.NewRequest(http.MethodGet, resource, nil)
	get.Header.Set("Authorization", "Bearer "+env.token)
	dw := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(dw, get)
	}
}
