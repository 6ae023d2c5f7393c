package jwks

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/internal/fetch"
)

func TestCauseClassification(t *testing.T) {
	tests := []struct {
		err  error
		want Cause
	}{
		{nil, causeNone},
		{fmt.Errorf("%w: %w", errDiscovery, asmeta.ErrIssuerMismatch), causeMixUp},
		{fmt.Errorf("x: %w: %w", fetch.ErrTransport, &net.DNSError{Err: "no such host", Name: "a.invalid", IsNotFound: true}), causeDNS},
		{fmt.Errorf("%w: %w", fetch.ErrTransport, x509.UnknownAuthorityError{}), causeTLS},
		{fmt.Errorf("%w: %w", fetch.ErrTransport, context.DeadlineExceeded), causeTimeout},
		{fmt.Errorf("%w: %w", fetch.ErrTransport, errors.New("connection refused")), causeConnect},
		{&fetch.StatusError{Code: http.StatusNotFound}, causeNotFound},
		{&fetch.StatusError{Code: http.StatusGone}, causeNotFound},
		{&fetch.StatusError{Code: http.StatusServiceUnavailable}, causeStatus},
		{fmt.Errorf("%w: %w", errDiscovery, asmeta.ErrNotFound), causeNotFound},
		{fmt.Errorf("%w: %w", errDiscovery, asmeta.ErrInvalidMetadata), causeMetadata},
		{errNoUsableKeys, causeNoUsableKey},
		{errInvalidSet, causeInvalidSet},
		{fetch.ErrContentType, causeInvalidSet},
		{errClosed, causeClosed},
		{errors.New("odd"), causeOther},
	}
	for _, tt := range tests {
		if got := causeOf(tt.err); got != tt.want {
			t.Errorf("causeOf(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// recorder is a RefreshObserver that keeps what it saw.
type recorder struct {
	mu     sync.Mutex
	starts []RefreshStart
	ends   []RefreshEnd
	ctxOK  bool
}

type obsKey struct{}

func (r *recorder) RefreshStart(ctx context.Context, e RefreshStart) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts = append(r.starts, e)
	return context.WithValue(ctx, obsKey{}, len(r.starts))
}

func (r *recorder) RefreshEnd(ctx context.Context, e RefreshEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctxOK = ctx.Value(obsKey{}) != nil
	r.ends = append(r.ends, e)
}

func (r *recorder) snapshot() ([]RefreshStart, []RefreshEnd, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RefreshStart(nil), r.starts...), append([]RefreshEnd(nil), r.ends...), r.ctxOK
}

type reqKey struct{}

// TestHealthAndObserver: Health follows the refreshes; the observer sees
// each start and end, on-demand ones under the request's values.
func TestHealthAndObserver(t *testing.T) {
	f := newFake(t, ecJWK(t, "k1"))
	clk := newClock()
	cfg := testConfig(t, f, clk)
	rec := &recorder{}
	cfg.Observer = rec
	s := newSource(t, cfg)
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatalf("WaitReady = %v", err)
	}
	eventually(t, 30*time.Second, func() bool { return !s.Health().NextRefresh.IsZero() })
	h := s.Health()
	if !h.Ready || h.Keys != 1 || !h.LastSuccess.Equal(clk.Now()) || !h.LastAttempt.Equal(clk.Now()) || h.LastError != nil ||
		h.Cause != causeNone || h.ConsecutiveFailures != 0 || !h.NextRefresh.Equal(clk.Now().Add(time.Hour)) || h.Issuer != cfg.Issuer {
		t.Errorf("Health = %+v", h)
	}

	// An on-demand refresh that fails: the set stays, the failure shows.
	f.setMode(modeNotFound)
	clk.Advance(time.Second)
	ctx := context.WithValue(t.Context(), reqKey{}, "request-7")
	if _, err := s.Keys(ctx, "unknown"); err == nil {
		t.Fatal("Keys(unknown) = nil")
	}
	eventually(t, 30*time.Second, func() bool { _, ends, _ := rec.snapshot(); return len(ends) == 2 })
	h = s.Health()
	if !h.Ready || h.Keys != 1 || h.Cause != causeNotFound || h.ConsecutiveFailures != 1 || !h.LastAttempt.Equal(clk.Now()) {
		t.Errorf("Health after a failure = %+v", h)
	}
	starts, ends, ctxOK := rec.snapshot()
	if len(starts) != 2 || starts[0].OnDemand || !starts[1].OnDemand || starts[1].Issuer != cfg.Issuer {
		t.Errorf("starts = %+v", starts)
	}
	if ends[0].Err != nil || ends[0].Keys != 1 || ends[1].Cause != causeNotFound || ends[1].Keys != 1 || !ctxOK || ends[1].Duration <= 0 {
		t.Errorf("ends = %+v (ctx from start: %v)", ends, ctxOK)
	}
	s.Close()
	if h := s.Health(); !h.NextRefresh.IsZero() {
		t.Errorf("NextRefresh after Close = %v", h.NextRefresh)
	}
}

// parentObserver checks that an on-demand refresh runs under the values
// of the request that started it.
type parentObserver struct{ got chan any }

func (p parentObserver) RefreshStart(ctx context.Context, e RefreshStart) context.Context {
	if e.OnDemand {
		p.got <- ctx.Value(reqKey{})
	}
	return ctx
}
func (parentObserver) RefreshEnd(context.Context, RefreshEnd) {}

func TestOnDemandRefreshCarriesRequestValues(t *testing.T) {
	f := newFake(t, ecJWK(t, "k1"))
	cfg := testConfig(t, f, newClock())
	po := parentObserver{got: make(chan any, 4)}
	cfg.Observer = po
	s := newSource(t, cfg)
	waitFirst(t, s)
	ctx, cancel := context.WithCancel(context.WithValue(t.Context(), reqKey{}, "request-7"))
	cancel() // a caller that is gone starts nothing
	_, _ = s.Keys(ctx, "unknown")
	_, _ = s.Keys(context.WithValue(t.Context(), reqKey{}, "request-8"), "unknown")
	select {
	case v := <-po.got:
		if v != "request-8" {
			t.Errorf("on-demand refresh ran under %v, want request-8's values", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no on-demand refresh observed")
	}
}

func TestWaitReadyFails(t *testing.T) {
	f := newFake(t, ecJWK(t, "k1"))
	f.setMode(modeNotFound)
	s := newSource(t, testConfig(t, f, newClock()))
	waitFirst(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := s.WaitReady(ctx)
	if !errors.Is(err, errNotReady) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady = %v", err)
	}
	var se *fetch.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusNotFound {
		t.Errorf("WaitReady = %v, want the 404 wrapped", err)
	}
}
