package introspect_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

// Fixed test values. Fixtures never call time.Now.
var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	testIss    = "https://as.example.com"
	testAud    = "https://mcp.example.com/mcp"
	testClient = "rs-client"
	testSecret = "rs-secret"
	testToken  = "opaque-token-1"
)

// stub is an introspection endpoint on 127.0.0.1 whose answer the test
// sets. It records the last request's form and Authorization header.
type stub struct {
	ts    *httptest.Server
	calls atomic.Int64

	mu       sync.Mutex
	h        http.HandlerFunc
	form     url.Values
	authz    string
	accept   string
	ctype    string
	lastPath string
}

func newStub(t testing.TB, h http.HandlerFunc) *stub {
	t.Helper()
	s := &stub{h: h}
	s.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		_ = r.ParseForm()
		s.mu.Lock()
		s.form, s.authz, s.accept, s.ctype, s.lastPath = r.PostForm, r.Header.Get("Authorization"), r.Header.Get("Accept"), r.Header.Get("Content-Type"), r.URL.Path
		h := s.h
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.ts.Close)
	return s
}

func (s *stub) URL() string { return s.ts.URL + "/introspect" }

func (s *stub) set(h http.HandlerFunc) {
	s.mu.Lock()
	s.h = h
	s.mu.Unlock()
}

func (s *stub) last() (form url.Values, authz string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.form, s.authz
}

func answer(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func jsonAnswer(body string) http.HandlerFunc { return answer(http.StatusOK, "application/json", body) }

// activeJSON is a valid active response at testNow, changed by kv pairs
// (a nil value deletes the member).
func activeJSON(kv ...any) string {
	m := map[string]any{
		"active":     true,
		"iss":        testIss,
		"aud":        testAud,
		"sub":        "alice",
		"client_id":  "client-1",
		"jti":        "jti-1",
		"scope":      "mcp:tools notes:read",
		"token_type": "Bearer",
		"iat":        testNow.Add(-time.Minute).Unix(),
		"nbf":        testNow.Add(-time.Minute).Unix(),
		"exp":        testNow.Add(time.Hour).Unix(),
		"tenant":     "tenant-a",
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(m, kv[i].(string))
			continue
		}
		m[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// newIntro returns an Introspector for cfg with test defaults for the
// zero fields: testIss, testAud, Basic credentials, a pinned clock.
func newIntro(t testing.TB, cfg introspect.Config) *introspect.Introspector {
	t.Helper()
	if cfg.Issuer == "" {
		cfg.Issuer = testIss
	}
	if cfg.Audiences == nil {
		cfg.Audiences = []string{testAud}
	}
	if cfg.ClientID == "" && cfg.AuthMethod != "bearer" {
		cfg.ClientID = testClient
	}
	if cfg.ClientSecret == "" && (cfg.AuthMethod == "" || cfg.AuthMethod == "client_secret_basic" || cfg.AuthMethod == "client_secret_post") {
		cfg.ClientSecret = testSecret
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testNow }
	}
	in, err := introspect.New(cfg)
	if err != nil {
		t.Fatalf("introspect.New: %v", err)
	}
	return in
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// sentinels are the validate sentinels an Introspector may return.
var sentinels = []error{
	validate.Error{Reason: "malformed"}, validate.Error{Reason: "too_large"}, validate.Error{Reason: "type"}, validate.Error{Reason: "issuer"}, validate.Error{Reason: "audience"},
	validate.Error{Reason: "expired"}, validate.Error{Reason: "not_yet_valid"}, validate.Error{Reason: "issued_at"}, validate.Error{Reason: "missing_claim"},
	validate.ErrKeysUnavailable, validate.Error{Reason: "inactive"}, validate.Error{Reason: "sender_constrained"},
}

// checkErr fails unless err wraps want and no other validate sentinel (nil
// want: err must be nil).
func checkErr(t testing.TB, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("err = %v, want nil", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	for _, s := range sentinels {
		if s != want && errors.Is(err, s) {
			t.Errorf("err = %v also wraps %v", err, s)
		}
	}
}

// deadlineClient returns an HTTP client without a timeout of its own
// (neither Client.Timeout nor ResponseHeaderTimeout) whose requests fail
// at once, with errNoDeadline, unless their context has a deadline at
// most most ahead. A test proves that Config.Timeout bounds a call by the
// deadline the call carries, not by timing the call, which a loaded
// machine stretches; and a call against a hanging server can then end
// only by that deadline.
func deadlineClient(most time.Duration) *http.Client {
	c := fetch.NewClient(fetch.ClientConfig{})
	tr := c.Transport.(*http.Transport)
	tr.ResponseHeaderTimeout = 0
	c.Timeout, c.Transport = 0, deadlineTransport{most: most, next: tr}
	return c
}

var errNoDeadline = errors.New("test: request without a deadline within the bound")

type deadlineTransport struct {
	most time.Duration
	next http.RoundTripper
}

func (d deadlineTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	dl, ok := r.Context().Deadline()
	if !ok {
		return nil, fmt.Errorf("%w: %s has none", errNoDeadline, r.URL)
	}
	if left := time.Until(dl); left > d.most {
		return nil, fmt.Errorf("%w: %s has one %v ahead, want at most %v", errNoDeadline, r.URL, left, d.most)
	}
	return d.next.RoundTrip(r)
}
