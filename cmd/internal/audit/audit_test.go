package audit_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/cmd/internal/audit"
	"github.com/mcpguard/mcpguard/middleware"
)

// knownBugs are checks that fail against main because of bugs other
// issues fix. Each leaves this list when its fix is merged. Empty since
// the merge of issue #11 (-32602 for a missing _meta version, a challenge
// on the terminal step-up 403) and issue #10 (the gosdk adapter binds
// go-sdk sessions).
var knownBugs = []string{}

// runAudit audits e's MCP endpoint with both tokens and returns the IDs of
// the failing checks, sorted.
func runAudit(t *testing.T, e *env, mod func(*audit.Config)) (*audit.Report, []string) {
	t.Helper()
	cfg := audit.Config{
		Endpoint:  e.mcpURL,
		Token:     e.tokA,
		Token2:    e.tokB,
		CallTools: true,
		Timeout:   5 * time.Second,
		Interval:  -1,
	}
	if mod != nil {
		mod(&cfg)
	}
	a, err := audit.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := a.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var failed []string
	for _, r := range rep.Results {
		if r.Verdict == audit.Fail {
			failed = append(failed, r.ID)
		}
	}
	slices.Sort(failed)
	return rep, failed
}

// with returns the known bugs plus ids, sorted.
func with(ids ...string) []string {
	out := append(slices.Clone(knownBugs), ids...)
	slices.Sort(out)
	return slices.Compact(out)
}

// TestAudit audits the example server and deliberately broken servers,
// each broken in one way, with both tokens: each must fail exactly the
// checks of the rule it breaks.
func TestAudit(t *testing.T) {
	alg := func(v middleware.TokenValidator) middleware.TokenValidator { return noneAccepting{v} }
	tests := []struct {
		name   string
		build  func(*testing.T) func(*env) http.Handler
		asWrap func(http.Handler) http.Handler
		want   []string
		// skipped lists checks that must be skipped (not applicable).
		skipped []string
		// strict: every check not in skipped must pass (none skipped
		// for want of a refused call or a tool to call).
		strict bool
	}{
		{
			name:    "example server",
			build:   func(t *testing.T) func(*env) http.Handler { return exampleServer(t, nil) },
			want:    with(),
			skipped: []string{audit.SessionBinding},
			strict:  true,
		},
		{
			name:    "test stack, correct",
			build:   func(t *testing.T) func(*env) http.Handler { return notesStack(t, stack{}) },
			want:    with(),
			skipped: []string{audit.SessionBinding},
			strict:  true,
		},
		{
			name:  "test stack, event-stream answers",
			build: func(t *testing.T) func(*env) http.Handler { return notesStack(t, stack{sse: true}) },
			want:  with(),
		},
		{
			name:  "challenge without error on an invalid token",
			build: func(t *testing.T) func(*env) http.Handler { return outer(exampleServer(t, nil), dropErrorCode) },
			want:  with(audit.TOKErrorCode),
		},
		{
			name:  "metadata built from Host",
			build: func(t *testing.T) func(*env) http.Handler { return outer(exampleServer(t, nil), hostDerived) },
			want:  with(audit.PRMHost),
		},
		{
			name:  "metadata built from X-Forwarded-Proto",
			build: func(t *testing.T) func(*env) http.Handler { return outer(exampleServer(t, nil), protoDerived) },
			want:  with(audit.PRMHost),
		},
		{
			name:  "accepts alg none",
			build: func(t *testing.T) func(*env) http.Handler { return exampleServer(t, alg) },
			want:  with(audit.TOKAlgNone),
		},
		{
			name: "runs tools before checking scope",
			build: func(t *testing.T) func(*env) http.Handler {
				return notesStack(t, stack{noToolScopes: true, inner: runThenRefuse})
			},
			// The refusal comes from a wrapper that has no step-up bound
			// and always challenges, so STEP-UP-BOUND fails too and the
			// middleware's terminal 403 (a known bug) is never reached.
			want: with(audit.StepUpBeforeRun, audit.StepUpBound),
		},
		{
			// Authorization inside the handler: a 200 with a tool error,
			// no challenge. No call is refused with 403, so the other
			// step-up checks are skipped.
			name: "scope checked inside the tool",
			build: func(t *testing.T) func(*env) http.Handler {
				return notesStack(t, stack{noToolScopes: true, inToolScope: true})
			},
			want: with(audit.StepUp),
		},
		{
			name: "stateful sessions without binding",
			build: func(t *testing.T) func(*env) http.Handler {
				return notesStack(t, stack{inner: sessions(false), hideSessions: true})
			},
			want: with(audit.SessionBinding),
		},
		{
			// The go-sdk's default (stateful) handler with nothing binding
			// its sessions (the plain middleware before issue #21, which
			// saw no session): the go-sdk binds a session to
			// TokenInfo.UserID, which nothing provides, so another
			// principal can use the session (issue #10). A stateful go-sdk
			// server does not serve 2026-07-28, so the 2026 checks are
			// skipped.
			name: "go-sdk stateful with nothing binding sessions",
			build: func(t *testing.T) func(*env) http.Handler {
				return notesStack(t, stack{stateful: true, hideSessions: true})
			},
			want:    with(audit.SessionBinding),
			skipped: []string{audit.TRHeaderMismatch, audit.TRMethods, audit.TRVersion, audit.TRMetaMissing},
		},
		{
			// The same behind the plain middleware, without the gosdk
			// adapter: the middleware binds the sessions (issue #21).
			name:    "go-sdk stateful behind the plain middleware",
			build:   func(t *testing.T) func(*env) http.Handler { return notesStack(t, stack{stateful: true}) },
			want:    with(),
			skipped: []string{audit.TRHeaderMismatch, audit.TRMethods, audit.TRVersion, audit.TRMetaMissing},
		},
		{
			// The same through the gosdk adapter: sessions are bound.
			name:    "go-sdk stateful through the gosdk adapter",
			build:   func(t *testing.T) func(*env) http.Handler { return notesStack(t, stack{stateful: true, adapter: true}) },
			want:    with(),
			skipped: []string{audit.TRHeaderMismatch, audit.TRMethods, audit.TRVersion, audit.TRMetaMissing},
			strict:  true,
		},
		{
			name:    "go-sdk stateless through the gosdk adapter",
			build:   func(t *testing.T) func(*env) http.Handler { return notesStack(t, stack{adapter: true}) },
			want:    with(),
			skipped: []string{audit.SessionBinding},
		},
		{
			name:  "stateful sessions bound to the subject",
			build: func(t *testing.T) func(*env) http.Handler { return notesStack(t, stack{inner: sessions(true)}) },
			want:  with(),
		},
		{
			name:  "tenant taken from the argument",
			build: func(t *testing.T) func(*env) http.Handler { return notesStack(t, stack{tenantFromArg: true}) },
			want:  with(audit.TenantFromToken),
		},
		{
			// Answers that change between identical calls cannot be
			// compared: skipped, not failed (nor passed).
			name:    "tenant argument on a tool whose answers vary",
			build:   func(t *testing.T) func(*env) http.Handler { return notesStack(t, stack{nonce: true}) },
			want:    with(),
			skipped: []string{audit.TenantFromToken},
		},
		{
			name:  "no Origin check",
			build: func(t *testing.T) func(*env) http.Handler { return notesStack(t, stack{anyOrigin: true}) },
			want:  with(audit.TROrigin),
		},
		{
			name:  "error bodies leak library text",
			build: func(t *testing.T) func(*env) http.Handler { return outer(exampleServer(t, nil), leakErrors) },
			want:  with(audit.LeakErrorBody),
		},
		{
			name:  "offline_access advertised",
			build: func(t *testing.T) func(*env) http.Handler { return outer(exampleServer(t, nil), advertiseOffline) },
			want:  with(audit.CHNoOffline, audit.PRMNoOffline),
		},
		{
			name:  "500 on an oversized token",
			build: func(t *testing.T) func(*env) http.Handler { return outer(exampleServer(t, nil), crashOnBigHeaders) },
			want:  with(audit.TOKOversized),
		},
		{
			name:  "token accepted in the query",
			build: func(t *testing.T) func(*env) http.Handler { return outer(exampleServer(t, nil), queryToken) },
			want:  with(audit.TRQueryToken),
		},
		{
			name:   "authorization server metadata names another issuer",
			build:  func(t *testing.T) func(*env) http.Handler { return exampleServer(t, nil) },
			asWrap: mixUp,
			want:   with(audit.ASMetadata, audit.ASIssuer),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.build(t), tt.asWrap)
			rep, failed := runAudit(t, e, nil)
			if !slices.Equal(failed, tt.want) {
				t.Errorf("failing checks:\n got %v\nwant %v\n%s", failed, tt.want, dump(rep))
			}
			for _, id := range tt.skipped {
				if r := result(rep, id); r.Verdict != audit.Skip {
					t.Errorf("%s: verdict %s, want skip", id, r.Verdict)
				}
			}
			if tt.strict {
				for _, r := range rep.Results {
					if r.Verdict != audit.Pass && !slices.Contains(tt.skipped, r.ID) && !notProxied(r) {
						t.Errorf("%s: verdict %s (%s), want pass", r.ID, r.Verdict, r.Detail)
					}
				}
			}
		})
	}
}

// result returns the result of id.
func result(rep *audit.Report, id string) audit.Result {
	for _, r := range rep.Results {
		if r.ID == id {
			return r
		}
	}
	return audit.Result{}
}

// dump renders the failing and skipped results for a test failure.
func dump(rep *audit.Report) string {
	var b strings.Builder
	for _, r := range rep.Results {
		if r.Verdict == audit.Pass {
			continue
		}
		b.WriteString(string(r.Verdict) + " " + r.ID + ": " + r.Detail + "\n")
		for _, e := range r.Evidence {
			b.WriteString("    " + e + "\n")
		}
	}
	return b.String()
}

// notProxied reports a PROXY-* check skipped because the audit was given
// no upstream.
func notProxied(r audit.Result) bool {
	return strings.HasPrefix(r.ID, "PROXY-") && r.Verdict == audit.Skip && strings.HasPrefix(r.Detail, "not behind a proxy")
}
