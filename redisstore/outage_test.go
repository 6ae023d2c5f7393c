package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/redisstore"
	"github.com/mcpguard/mcpguard/validate"
)

// TestRedisDown stops Redis mid-run and checks the documented behaviour
// of each store: replay fails closed, the step-up bound fails open (the
// ordinary challenge, uncounted, and a warning), the client store reports
// an outage that is not "unknown client". Each call gives up within the
// store's Timeout: every command reaches go-redis with a deadline at most
// Timeout ahead (checked by a hook, not by timing the calls, which a
// loaded machine would make flaky, and which a stopped server answers at
// once whatever the deadline).
func TestRedisDown(t *testing.T) {
	srv, rdb := newRedis(t)
	// testTimeout (10 s), not a short one: before the outage every call
	// must succeed, and a command on a loaded machine can take longer than
	// 300 ms (the step-up bound then failed open: "challenge past the
	// limit while Redis is up"); with Redis down the calls fail at once
	// whatever it is, and the hook checks the deadline, not the time.
	cfg := redisstore.Config{Client: rdb, Timeout: testTimeout}
	deadlines := &deadlineHook{most: cfg.Timeout}
	rdb.AddHook(deadlines)
	t.Cleanup(func() { deadlines.check(t) })
	replay, _ := redisstore.NewReplayStore(cfg)
	steps, _ := redisstore.NewStepUpStore(cfg)
	clients, _ := redisstore.NewClientStore(cfg)
	ctx := t.Context()

	// Before the outage: a counted step-up and a registered client.
	iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource})
	var logs bytes.Buffer
	h := stepUpReplica(t, iss, steps, slog.New(slog.NewTextHandler(&logs, nil)))
	token := iss.Token(t, authtest.Token{Scopes: []string{"mcp"}})
	for range 3 {
		if !challenged(t, h, token) {
			t.Fatal("terminal 403 before the limit")
		}
	}
	if challenged(t, h, token) {
		t.Fatal("challenge past the limit while Redis is up")
	}
	if err := clients.Put(ctx, &cimd.Client{Document: cimd.Document{ClientID: "dcr_1"}}); err != nil {
		t.Fatal(err)
	}

	srv.Stop()

	before := deadlines.count()
	fresh, err := replay.Claim(ctx, "p", "jti-1", time.Minute)
	if fresh || !errors.Is(err, redisstore.ErrUnavailable) {
		t.Errorf("Claim with Redis down = %v, %v; want false, ErrUnavailable (fail closed)", fresh, err)
	}
	if _, err := steps.Incr(ctx, "p", "k", time.Minute, time.Time{}); !errors.Is(err, redisstore.ErrUnavailable) {
		t.Errorf("Incr with Redis down = %v, want ErrUnavailable", err)
	}
	if err := steps.Reset(ctx, "p", "k"); !errors.Is(err, redisstore.ErrUnavailable) {
		t.Errorf("Reset with Redis down = %v, want ErrUnavailable", err)
	}
	_, err = clients.Get(ctx, "dcr_1")
	if !errors.Is(err, redisstore.ErrUnavailable) || errors.Is(err, cimd.ErrUnknownClient) {
		t.Errorf("Get with Redis down = %v; want ErrUnavailable and not ErrUnknownClient", err)
	}
	if err := clients.Put(ctx, &cimd.Client{Document: cimd.Document{ClientID: "dcr_2"}}); !errors.Is(err, redisstore.ErrUnavailable) {
		t.Errorf("Put with Redis down = %v", err)
	}
	if got := deadlines.count() - before; got < 5 {
		t.Errorf("%d commands with Redis down, want one for each of the five calls", got)
	}

	// The middleware: the ordinary challenge, uncounted, every time, and a
	// warning in the log.
	for i := range 5 {
		if !challenged(t, h, token) {
			t.Fatalf("request %d with Redis down: terminal 403, want the ordinary challenge (fail open)", i)
		}
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "step-up store failed") {
		t.Errorf("log = %q, want a warning about the step-up store", logs.String())
	}

	// DCR: registration fails closed with 503 (the network quota, counted
	// in Redis, is unavailable), lookups are not "unknown client".
	dcr, err := cimd.NewDCRHandler(cimd.DCRConfig{Store: clients, IPRate: rate.Inf, GlobalRate: rate.Inf})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "https://as.example/register", strings.NewReader(
		`{"client_name":"CLI","application_type":"native","redirect_uris":["http://127.0.0.1/callback"],"token_endpoint_auth_method":"none"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	dcr.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("register with Redis down: %d %s, want 503 with Retry-After 1", rec.Code, rec.Body)
	}
	reg, _ := cimd.NewRegistry(cimd.RegistryConfig{Store: clients})
	if _, err := reg.Lookup(ctx, "dcr_1"); errors.Is(err, cimd.ErrUnknownClient) || err == nil {
		t.Errorf("Lookup with Redis down = %v, want an outage error", err)
	}
}

// deadlineHook is a go-redis hook that records every command (and
// pipeline) and whether its context had a deadline at most most ahead.
// The check does not depend on the machine's speed: the time left before
// a deadline only shrinks.
type deadlineHook struct {
	most time.Duration

	mu   sync.Mutex
	n    int
	errs []string
}

func (h *deadlineHook) see(ctx context.Context, what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	dl, ok := ctx.Deadline()
	switch {
	case !ok:
		h.errs = append(h.errs, what+": no deadline")
	case time.Until(dl) > h.most:
		h.errs = append(h.errs, fmt.Sprintf("%s: deadline %v ahead, want at most %v", what, time.Until(dl), h.most))
	}
}

func (h *deadlineHook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func (h *deadlineHook) check(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		t.Error("no command seen by the hook")
	}
	for _, e := range h.errs {
		t.Errorf("command %s", e)
	}
}

func (h *deadlineHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *deadlineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.see(ctx, cmd.Name())
		return next(ctx, cmd)
	}
}

func (h *deadlineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.see(ctx, fmt.Sprintf("pipeline of %d", len(cmds)))
		return next(ctx, cmds)
	}
}

// stepUpReplica is replica with a logger.
func stepUpReplica(t *testing.T, iss *authtest.Issuer, store middleware.StepUpStore, log *slog.Logger) http.Handler {
	t.Helper()
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
		Audiences: []string{resource},
		Now:       iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := middleware.New(middleware.Config{
		Validator:   v,
		Metadata:    prm.Metadata{Resource: resource, AuthorizationServers: []string{iss.URL}},
		Scopes:      []string{"mcp", "admin"},
		StepUpLimit: 3,
		StepUpStore: store,
		Logger:      log,
		Now:         iss.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
}

func TestConfigErrors(t *testing.T) {
	_, rdb := newRedis(t)
	for _, cfg := range []redisstore.Config{
		{},
		{Client: rdb, Prefix: strings.Repeat("p", 64+1)},
		{Client: rdb, Timeout: -1},
	} {
		if _, err := redisstore.NewStepUpStore(cfg); !errors.Is(err, redisstore.ErrConfig) {
			t.Errorf("NewStepUpStore(%+v) = %v", cfg, err)
		}
		if _, err := redisstore.NewReplayStore(cfg); !errors.Is(err, redisstore.ErrConfig) {
			t.Errorf("NewReplayStore(%+v) = %v", cfg, err)
		}
	}
	if _, err := redisstore.NewClientStore(redisstore.Config{Client: rdb, ClientTTL: -1}); !errors.Is(err, redisstore.ErrConfig) {
		t.Errorf("NewClientStore(negative TTL) = %v", err)
	}
}
