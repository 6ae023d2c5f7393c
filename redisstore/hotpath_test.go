package redisstore_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/internal/redistest"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/redisstore"
	"github.com/mcpguard/mcpguard/validate"
)

// countingHook counts the commands a client sends.
type countingHook struct{ n atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// hotPath is a middleware with a cached validator and the Redis step-up
// store, and a tools/call request body that can be replayed.
type hotPath struct {
	h     http.Handler
	token string
}

func newHotPath(tb testing.TB, store middleware.StepUpStore) *hotPath {
	iss := authtest.NewIssuer(tb, authtest.IssuerConfig{Audience: resource})
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
		Audiences: []string{resource},
		Now:       iss.Now,
	})
	if err != nil {
		tb.Fatal(err)
	}
	m, err := middleware.New(middleware.Config{
		Validator:   v,
		Metadata:    prm.Metadata{Resource: resource, AuthorizationServers: []string{iss.URL}},
		Scopes:      []string{"mcp"},
		Operations:  middleware.OperationPolicy{Tools: map[string][]string{"admin": {"admin"}}},
		StepUpStore: store,
		Now:         iss.Now,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return &hotPath{
		h: m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusNoContent)
		})),
		token: iss.Token(tb, authtest.Token{Scopes: []string{"mcp"}}),
	}
}

type rewind struct{ bytes.Reader }

func (*rewind) Close() error { return nil }

type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

func (p *hotPath) request(tool string) (*http.Request, func()) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`)
	r := httptest.NewRequest(http.MethodPost, resource, nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+p.token)
	rb := &rewind{}
	r.Body, r.ContentLength = rb, int64(len(body))
	return r, func() { rb.Reset(body) }
}

// TestHotPathNoRedis: an authorized request makes no Redis call; a
// step-up challenge makes one command (the Lua script; EVALSHA, plus one
// EVAL the first time the script is not yet cached by Redis).
func TestHotPathNoRedis(t *testing.T) {
	_, rdb := newRedis(t)
	if err := rdb.Ping(t.Context()).Err(); err != nil { // connection set-up is not per request
		t.Fatal(err)
	}
	hook := &countingHook{}
	rdb.AddHook(hook)
	store, err := redisstore.NewStepUpStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	p := newHotPath(t, store)
	r, reset := p.request("whoami")
	w := &discard{h: http.Header{}}
	for range 100 {
		reset()
		p.h.ServeHTTP(w, r)
	}
	if n := hook.n.Load(); n != 0 {
		t.Errorf("100 authorized requests sent %d Redis commands, want 0", n)
	}
	admin, resetAdmin := p.request("admin")
	for i := range 3 {
		before := hook.n.Load()
		resetAdmin()
		rec := httptest.NewRecorder()
		p.h.ServeHTTP(rec, admin)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Header().Get("WWW-Authenticate"), "insufficient_scope") {
			t.Fatalf("challenge %d: %d %v", i, rec.Code, rec.Header())
		}
		sent := hook.n.Load() - before
		if want := int64(1); i > 0 && sent != want || i == 0 && sent > 2 {
			t.Errorf("challenge %d sent %d Redis commands", i, sent)
		}
	}
}

// BenchmarkHotPath compares an authorized, cached tools/call with the
// in-memory step-up store and with the Redis one: same time, same
// allocations, no Redis command.
func BenchmarkHotPath(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	hook := &countingHook{}
	rdb.AddHook(hook)
	rs, _ := redisstore.NewStepUpStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
	for _, c := range []struct {
		name  string
		store middleware.StepUpStore
	}{{"store=memory", nil}, {"store=redis", rs}} {
		p := newHotPath(b, c.store)
		r, reset := p.request("whoami")
		w := &discard{h: http.Header{}}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				reset()
				p.h.ServeHTTP(w, r)
			}
		})
	}
	if n := hook.n.Load(); n != 0 {
		b.Errorf("%d Redis commands on the hot path", n)
	}
}
