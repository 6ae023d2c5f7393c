package introspect_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

type callRecorder struct {
	mu     sync.Mutex
	ends   []introspect.CallEnd
	parent []any
}

type ctxKey struct{}

func (r *callRecorder) CallStart(ctx context.Context, _ introspect.CallStart) context.Context {
	return context.WithValue(ctx, ctxKey{}, "span")
}

func (r *callRecorder) CallEnd(ctx context.Context, e introspect.CallEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends = append(r.ends, e)
	r.parent = append(r.parent, ctx.Value(ctxKey{}))
}

// TestCallObserver: each call to the endpoint (not a cache hit) is
// observed once, with its outcome, under the context CallStart returned.
func TestCallObserver(t *testing.T) {
	s := newStub(t, jsonAnswer(activeJSON()))
	rec := &callRecorder{}
	in := newIntro(t, introspect.Config{Endpoint: s.URL(), Observer: rec})
	ctx := t.Context()
	for range 2 { // the second is a cache hit
		if _, err := in.Validate(ctx, "tok-active"); err != nil {
			t.Fatal(err)
		}
	}
	s.set(jsonAnswer(`{"active":false}`))
	if _, err := in.Validate(ctx, "tok-inactive"); !errors.Is(err, validate.Error{Reason: "inactive"}) {
		t.Fatalf("inactive: %v", err)
	}
	s.set(answer(http.StatusUnauthorized, "application/json", `{}`))
	_, _ = in.Validate(ctx, "tok-auth")
	s.set(answer(http.StatusBadGateway, "text/plain", "down"))
	_, _ = in.Validate(ctx, "tok-down")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var outcomes []string
	for i, e := range rec.ends {
		outcomes = append(outcomes, e.Outcome)
		if rec.parent[i] != "span" || e.Issuer != testIss || e.Duration <= 0 {
			t.Errorf("end %d = %+v under %v", i, e, rec.parent[i])
		}
	}
	want := []string{"active", "inactive", "client_auth", "unavailable"}
	if len(outcomes) != len(want) {
		t.Fatalf("outcomes = %v, want %v", outcomes, want)
	}
	for i := range want {
		if outcomes[i] != want[i] {
			t.Errorf("outcomes = %v, want %v", outcomes, want)
		}
	}
}
