package middleware

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
)

// syncBuf is a concurrency-safe log sink.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

// TestRefusalLogs: under the default slog level (Info), refusals are
// logged with reason, method, tool, client and issuer and never the
// token, at most defaultRefusalLogRate a second per reason, the excess
// reported as suppressed.
func TestRefusalLogs(t *testing.T) {
	var buf syncBuf
	var now time.Time
	f := newFixture(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&buf, nil)) // default level: Info
		c.Now = func() time.Time { return now }
	})
	now = f.iss.Now()

	// A flood of bad tokens in one second: 5 records.
	bad := f.iss.Token(t, authtest.Token{ForeignKey: true})
	for range 100 {
		rec := httptest.NewRecorder()
		f.m.Handler(echoHandler()).ServeHTTP(rec, rpcRequest(modernRev, "tools/list", "", bad))
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("status %d", rec.Code)
		}
	}
	lines := buf.lines()
	if len(lines) != defaultRefusalLogRate {
		t.Fatalf("%d records for 100 refusals in one second, want %d:\n%s", len(lines), defaultRefusalLogRate, strings.Join(lines, "\n"))
	}
	want := `level=INFO msg="middleware: request refused" status=401 reason=signature error="validate: invalid signature" http_method=POST path=/mcp`
	if !strings.Contains(lines[0], want) {
		t.Errorf("record = %s\nwant it to contain %s", lines[0], want)
	}

	// The next second: one record carries the count of the dropped ones.
	now = now.Add(time.Second)
	f.m.Handler(echoHandler()).ServeHTTP(httptest.NewRecorder(), rpcRequest(modernRev, "tools/list", "", bad))
	lines = buf.lines()
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, " suppressed=95") {
		t.Errorf("record after the flood = %s, want suppressed=95", last)
	}

	// Another reason has its own budget; a refusal after a valid token
	// names the method, tool, client and issuer.
	tok := f.iss.Token(t, authtest.Token{Scopes: []string{"mcp", "tools:call"}, ClientID: "client-7"})
	rec := httptest.NewRecorder()
	f.m.Handler(echoHandler()).ServeHTTP(rec, rpcRequest(modernRev, "tools/call", "delete_repo", tok))
	if rec.Code != http.StatusForbidden {
		t.Fatalf("status %d", rec.Code)
	}
	lines = buf.lines()
	last := lines[len(lines)-1]
	for _, w := range []string{"level=INFO", "status=403", "reason=insufficient_scope", "mcp_method=tools/call", "tool=delete_repo",
		"revision=" + modernRev, "client_id=client-7", "issuer=" + f.iss.URL} {
		if !strings.Contains(last, w) {
			t.Errorf("record %s lacks %s", last, w)
		}
	}
	for _, l := range lines {
		for _, secret := range []string{bad, tok, bad[strings.LastIndexByte(bad, '.')+1:]} {
			if strings.Contains(l, secret) {
				t.Fatalf("a record holds a token: %s", l)
			}
		}
	}
}

// TestRefusalLogRateNegative logs every refusal.
func TestRefusalLogRateNegative(t *testing.T) {
	var buf syncBuf
	f := newFixture(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&buf, nil))
		c.RefusalLogRate = -1
	})
	for range 20 {
		f.m.Handler(echoHandler()).ServeHTTP(httptest.NewRecorder(), rpcRequest(modernRev, "tools/list", "", ""))
	}
	if n := len(buf.lines()); n != 20 {
		t.Errorf("%d records, want 20", n)
	}
}

// TestRefusalSamplerConcurrent: concurrent refusals share one budget.
func TestRefusalSamplerConcurrent(t *testing.T) {
	var s refusalSampler
	now := time.Unix(1000, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if ok, _ := s.allow(reasonNoToken, now, 5); ok {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if allowed != 5 {
		t.Errorf("allowed %d of 800 in one second, want 5", allowed)
	}
	if ok, sup := s.allow(reasonNoToken, now.Add(time.Second), 5); !ok || sup != 795 {
		t.Errorf("next window: %v %d, want true 795", ok, sup)
	}
}

// TestRefusalLogsRule: a rule's refusal record carries the decision
// event's request fields (docs/operations.md, "Decision events"): the
// rule, the revision, the session and the arguments' SHA-256, never the
// arguments.
func TestRefusalLogsRule(t *testing.T) {
	var buf syncBuf
	f := newFixture(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&buf, nil))
		c.TenantArgument = "tenant"
	})
	r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(ruleBody(legacyRev, "get_weather", `{"tenant":"tenant-zz"}`)))
	r.Header.Set("MCP-Protocol-Version", legacyRev)
	r.Header.Set("Mcp-Session-Id", "sess-7")
	r.Header.Set("Authorization", "Bearer "+f.token(t, "mcp:all", "weather:read"))
	rec := httptest.NewRecorder()
	f.m.Handler(echoHandler()).ServeHTTP(rec, r)
	if rec.Code != http.StatusForbidden {
		t.Fatalf("status %d", rec.Code)
	}
	lines := buf.lines()
	if len(lines) != 1 {
		t.Fatalf("records %q", lines)
	}
	digest := argsDigest([]byte(`{"tenant":"tenant-zz"}`))
	for _, w := range []string{"reason=rule_denied", "rule=tenant_argument", "revision=" + legacyRev, "session=sess-7", "arguments_sha256=" + digest} {
		if !strings.Contains(lines[0], w) {
			t.Errorf("record %s lacks %s", lines[0], w)
		}
	}
	if len(digest) != 64 || strings.Contains(lines[0], "tenant-zz") {
		t.Errorf("record %s: want the digest, never the arguments", lines[0])
	}
}
