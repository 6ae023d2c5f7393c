package introspect_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

// TestEndpointAnswersThroughMiddleware puts the introspector behind the
// real middleware and checks the exact answer a client sees, and the log
// level, for every class of endpoint answer: a 400 about the token is a
// 401 invalid_token logged at Debug only; a 400 that blames our own
// credentials, 401/403, 429, 5xx and transport failures are 503.
func TestEndpointAnswersThroughMiddleware(t *testing.T) {
	tests := []struct {
		name       string
		h          http.HandlerFunc
		wantStatus int
		wantErr    error // also wrapped by the Validate error
		wantLevel  string
	}{
		{"400 invalid_request", answer(400, "application/json", `{"error":"invalid_request"}`), 401, introspect.ErrRefused, "DEBUG"},
		{"400 unsupported_token_type", answer(400, "application/json", `{"error":"unsupported_token_type","error_description":"not ours"}`), 401, introspect.ErrRefused, "DEBUG"},
		{"400 invalid_token", answer(400, "application/json;charset=utf-8", `{"error":"invalid_token"}`), 401, introspect.ErrRefused, "DEBUG"},
		{"400 without body", answer(400, "", ``), 401, introspect.ErrRefused, "DEBUG"},
		{"400 html", answer(400, "text/html", `<h1>bad</h1>`), 401, introspect.ErrRefused, "DEBUG"},
		{"400 duplicate error member", answer(400, "application/json", `{"error":"invalid_request","error":"invalid_client"}`), 401, introspect.ErrRefused, "DEBUG"},
		{"400 error member case variant", answer(400, "application/json", `{"ERROR":"invalid_client"}`), 401, introspect.ErrRefused, "DEBUG"},
		{"413 token too large for the endpoint", answer(413, "text/plain", `too large`), 401, introspect.ErrRefused, "DEBUG"},
		{"404 endpoint misconfigured", answer(404, "text/plain", `not found`), 503, introspect.ErrEndpoint, ""},
		{"400 invalid_client", answer(400, "application/json", `{"error":"invalid_client"}`), 503, introspect.ErrClientAuth, "ERROR"},
		{"400 unauthorized_client", answer(400, "application/json", `{"error":"unauthorized_client"}`), 503, introspect.ErrClientAuth, "ERROR"},
		{"401 invalid_client", answer(401, "application/json", `{"error":"invalid_client"}`), 503, introspect.ErrClientAuth, "ERROR"},
		{"403", answer(403, "application/json", `{}`), 503, introspect.ErrClientAuth, "ERROR"},
		{"429", answer(429, "application/json", `{}`), 503, introspect.ErrEndpoint, ""},
		{"500", answer(500, "application/json", `{"error":"server_error"}`), 503, introspect.ErrEndpoint, ""},
		{"503", answer(503, "", ``), 503, introspect.ErrEndpoint, ""},
		{"connection reset", func(w http.ResponseWriter, r *http.Request) {
			c, _, _ := w.(http.Hijacker).Hijack()
			_ = c.Close()
		}, 503, introspect.ErrEndpoint, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStub(t, tt.h)
			var logs logBuffer
			lg := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			in := newIntro(t, introspect.Config{Endpoint: s.URL(), Logger: lg})
			_, err := in.Validate(t.Context(), testToken)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Validate err = %v, want it to wrap %v", err, tt.wantErr)
			}
			if got := errors.Is(err, validate.ErrKeysUnavailable); got != (tt.wantStatus == 503) {
				t.Errorf("Validate err = %v: unavailable %v, want %v", err, got, tt.wantStatus == 503)
			}
			logged := logs.String()
			for _, lvl := range []string{"WARN", "ERROR"} {
				if got := strings.Contains(logged, "level="+lvl); got != (tt.wantLevel == lvl) {
					t.Errorf("logged at %s = %v, want %v; log:\n%s", lvl, got, tt.wantLevel == lvl, logged)
				}
			}
			if tt.wantLevel == "DEBUG" && !strings.Contains(logged, "level=DEBUG") {
				t.Errorf("no Debug line for the refusal; log:\n%s", logged)
			}
			if strings.Contains(logged, testToken) || strings.Contains(err.Error(), testToken) {
				t.Error("token leaked into log or error")
			}

			var mlogs logBuffer
			m, err := middleware.New(middleware.Config{
				Validator: in,
				Metadata:  prm.Metadata{Resource: testAud, AuthorizationServers: []string{testIss}},
				Logger:    slog.New(slog.NewTextHandler(&mlogs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			})
			if err != nil {
				t.Fatal(err)
			}
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("handler reached") }))
			req := httptest.NewRequest(http.MethodPost, testAud, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if warned := strings.Contains(mlogs.String(), "level=WARN"); warned != (tt.wantStatus == 503) {
				t.Errorf("middleware logged at Warn = %v, want %v (a junk token must raise no outage alarm); log:\n%s", warned, tt.wantStatus == 503, mlogs.String())
			}
			wa := rec.Header().Get("WWW-Authenticate")
			switch tt.wantStatus {
			case 401:
				if !strings.HasPrefix(wa, "Bearer ") || !strings.Contains(wa, `error="invalid_token"`) {
					t.Errorf("WWW-Authenticate = %q, want a Bearer invalid_token challenge", wa)
				}
				if rec.Header().Get("Retry-After") != "" {
					t.Errorf("Retry-After on a 401: %q", rec.Header().Get("Retry-After"))
				}
			case 503:
				if rec.Header().Get("Retry-After") == "" {
					t.Error("503 without Retry-After")
				}
			}
		})
	}
}

// TestRefusedTokenCachedLikeInactive: a 400 about a token is remembered
// only with InactiveCacheTTL, like "active": false.
func TestRefusedTokenCachedLikeInactive(t *testing.T) {
	s := newStub(t, answer(400, "application/json", `{"error":"invalid_request"}`))
	for _, ttl := range []time.Duration{0, time.Minute} {
		before := s.calls.Load()
		in := newIntro(t, introspect.Config{Endpoint: s.URL(), InactiveCacheTTL: ttl})
		for range 3 {
			if _, err := in.Validate(t.Context(), testToken); !errors.Is(err, validate.Error{Reason: "inactive"}) {
				t.Fatalf("err = %v", err)
			}
		}
		want := int64(3)
		if ttl > 0 {
			want = 1
		}
		if got := s.calls.Load() - before; got != want {
			t.Errorf("InactiveCacheTTL %v: endpoint calls = %d, want %d", ttl, got, want)
		}
	}
}

// TestTokenSourceGetsRequestContext: the authBearer source is called with
// a context that carries the request's values and ends with Config.Timeout,
// and a hanging token endpoint cannot hold a request longer than that.
func TestTokenSourceGetsRequestContext(t *testing.T) {
	type key struct{}
	s := newStub(t, jsonAnswer(activeJSON()))
	var sawValue, sawDeadline bool
	ts := tokenSourceFunc(func(ctx context.Context) (*oauth2.Token, error) {
		sawValue = ctx.Value(key{}) == "v"
		_, sawDeadline = ctx.Deadline()
		return &oauth2.Token{AccessToken: "rs"}, nil
	})
	in := newIntro(t, introspect.Config{Endpoint: s.URL(), AuthMethod: "bearer", TokenSource: ts})
	if _, err := in.Validate(context.WithValue(t.Context(), key{}, "v"), testToken); err != nil {
		t.Fatal(err)
	}
	if !sawValue || !sawDeadline {
		t.Errorf("token source ctx: value %v, deadline %v; want both", sawValue, sawDeadline)
	}

	// A client credentials token endpoint that hangs: the request ends
	// with Config.Timeout, as 503. The token request's client has no
	// timeout of its own and refuses a request without a deadline at most
	// the Timeout ahead, so only the Timeout can end it: the error says
	// it was a deadline (no caller deadline here), not a bound on the
	// elapsed real time, which a loaded machine stretches.
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) }) // runs first
	const timeout = 200 * time.Millisecond
	cc := introspect.ClientCredentials(clientcredentials.Config{ClientID: "rs", ClientSecret: "x", TokenURL: hang.URL + "/token"}, deadlineClient(timeout))
	in = newIntro(t, introspect.Config{Endpoint: s.URL(), AuthMethod: "bearer", TokenSource: cc, Timeout: timeout})
	_, err := in.Validate(t.Context(), testToken)
	if !errors.Is(err, introspect.ErrClientAuth) || !errors.Is(err, validate.ErrKeysUnavailable) {
		t.Errorf("err = %v, want ErrClientAuth and ErrKeysUnavailable", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errNoDeadline) {
		t.Errorf("err = %v, want the end of the %v Timeout's deadline", err, timeout)
	}
}

// TestClientCredentialsCachesToken: one token request for many
// introspections while the token is valid.
func TestClientCredentialsCachesToken(t *testing.T) {
	var tokenCalls int
	tokSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenCalls++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"rs-at","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(tokSrv.Close)
	s := newStub(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer rs-at" {
			answer(401, "application/json", `{"error":"invalid_token"}`)(w, r)
			return
		}
		jsonAnswer(activeJSON())(w, r)
	})
	cc := introspect.ClientCredentials(clientcredentials.Config{ClientID: "rs", ClientSecret: "x", TokenURL: tokSrv.URL + "/token"}, nil)
	in := newIntro(t, introspect.Config{Endpoint: s.URL(), AuthMethod: "bearer", TokenSource: cc, CacheSize: -1})
	for range 5 {
		if _, err := in.Validate(t.Context(), testToken); err != nil {
			t.Fatal(err)
		}
	}
	if tokenCalls != 1 {
		t.Errorf("token requests = %d, want 1", tokenCalls)
	}
}

// tokenSourceFunc adapts a function to introspect.TokenSource.
type tokenSourceFunc func(ctx context.Context) (*oauth2.Token, error)

func (f tokenSourceFunc) Token(ctx context.Context) (*oauth2.Token, error) { return f(ctx) }
