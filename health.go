package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mcpguard/mcpguard/validate/jwks"
)

// ErrNotReady: the key set of at least one issuer was not loaded in time
// ([Guard.WaitReady], Config.WaitForKeys). The error also wraps each
// failing source's [jwks.Source.WaitReady] error, which names the issuer and the
// cause (jwks.Cause: "dns", "tls", "not_found", "issuer_mismatch", …).
var ErrNotReady = errors.New("mcpguard: key sets not loaded")

// healthReporter is a key source that reports its health, as
// [*jwks.Source] does.
type healthReporter interface {
	Health() jwks.Health
}

var _ healthReporter = (*jwks.Source)(nil)

// readyWaiter is a key source that can wait for its first key set.
type readyWaiter interface {
	WaitReady(ctx context.Context) error
}

// Health returns the health of each issuer's key source, in the order of
// Config.Issuers. A source from Config.Keys without a Health method like
// [jwks.Source.Health] (validate.StaticKeys, …) is reported Ready, since
// nothing is fetched. It never does I/O.
func (g *Guard) Health() []jwks.Health {
	out := make([]jwks.Health, len(g.issuers))
	for i, is := range g.issuers {
		if hr, ok := is.Keys.(healthReporter); ok {
			out[i] = hr.Health()
			out[i].Issuer = is.Issuer
			continue
		}
		out[i] = jwks.Health{Issuer: is.Issuer, Ready: true}
	}
	return out
}

// WaitReady waits until every issuer's key source has loaded a first key
// set, or ctx is done; bound ctx. Sources that cannot wait (static keys)
// are ready. On failure the error wraps [ErrNotReady] and names each
// issuer that is not ready with its cause.
func (g *Guard) WaitReady(ctx context.Context) error {
	var errs []error
	for _, is := range g.issuers {
		if w, ok := is.Keys.(readyWaiter); ok {
			if err := w.WaitReady(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrNotReady, errors.Join(errs...))
	}
	return nil
}

// ReadyHandler returns a readiness probe for the Guard: [ReadyHandler] of
// every issuer's key source, with the sources without health (static
// keys) ready.
func (g *Guard) ReadyHandler() http.Handler {
	return readyHandler{health: g.Health, now: g.now}
}

// ReadyHandler returns a readiness probe (Kubernetes readinessProbe,
// a load balancer health check) over sources: GET or HEAD answers 200
// when every source has loaded a key set, 503 otherwise, with a small
// JSON body per issuer (ready, keys, key-set age, the cause of the last
// failure, next refresh). The body holds no error text, URL or key
// material, only the stable jwks.Cause codes, so the probe may be
// reachable by the load balancer. Other methods get 405. Mount it
// outside the authorization middleware, for example at /readyz.
func ReadyHandler(sources ...*jwks.Source) http.Handler {
	return readyHandler{health: func() []jwks.Health {
		out := make([]jwks.Health, len(sources))
		for i, s := range sources {
			out[i] = s.Health()
		}
		return out
	}, now: time.Now}
}

type readyHandler struct {
	health func() []jwks.Health
	now    func() time.Time
}

// readyIssuer is one issuer in the probe's body.
type readyIssuer struct {
	Issuer      string  `json:"issuer"`
	Ready       bool    `json:"ready"`
	Keys        int     `json:"keys"`
	AgeSeconds  float64 `json:"key_set_age_seconds,omitempty"`
	LastSuccess string  `json:"last_success,omitempty"`
	Cause       string  `json:"last_error,omitempty"`
	Failures    int     `json:"consecutive_failures,omitempty"`
	NextRefresh string  `json:"next_refresh,omitempty"`
}

func (h readyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	now := h.now()
	body := struct {
		Status  string        `json:"status"`
		Issuers []readyIssuer `json:"issuers"`
	}{Status: "ready", Issuers: []readyIssuer{}}
	status := http.StatusOK
	for _, hs := range h.health() {
		ri := readyIssuer{Issuer: hs.Issuer, Ready: hs.Ready, Keys: hs.Keys, Cause: string(hs.Cause), Failures: hs.ConsecutiveFailures}
		if !hs.LastSuccess.IsZero() {
			ri.LastSuccess = hs.LastSuccess.UTC().Format(time.RFC3339)
			ri.AgeSeconds = max(now.Sub(hs.LastSuccess).Seconds(), 0)
		}
		if !hs.NextRefresh.IsZero() {
			ri.NextRefresh = hs.NextRefresh.UTC().Format(time.RFC3339)
		}
		if !hs.Ready {
			status, body.Status = http.StatusServiceUnavailable, "not_ready"
		}
		body.Issuers = append(body.Issuers, ri)
	}
	b, err := json.Marshal(body)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(append(b, '\n'))
	}
}
