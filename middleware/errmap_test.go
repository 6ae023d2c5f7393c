package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/internal/golden"
	"github.com/mcpguard/mcpguard/validate"
)

func TestKindOf(t *testing.T) {
	tests := []struct {
		err  error
		want kind
	}{
		{errNoToken, kindNoToken},
		{errOtherScheme, kindNoToken},
		{errMultipleTokens, kindMultipleTokens},
		{errBearerChars, kindMalformedHeader},
		{errTokenInQuery, kindTokenInQuery},
		{errOrigin, kindOrigin},
		{validate.ErrKeysUnavailable, kindUnavailable},
		{fmt.Errorf("x: %w", validate.ErrKeysUnavailable), kindUnavailable},
		{context.DeadlineExceeded, kindUnavailable},
		{errBodyTooLarge, kindTooLarge},
		{errNotJSON, kindMalformedBody},
		{errDupKey, kindInvalidMessage},
		{errBatch, kindBatch},
		{errNameMismatch, kindHeaderMismatch},
		{Error{Reason: "insufficient_scope"}, kindInsufficientScope},
		{fmt.Errorf("%w: %w", errStepUpExhausted, Error{Reason: "insufficient_scope"}), kindStepUpExhausted},
		{errNotListed, kindForbidden},
		{errTenantMismatch, kindForbidden},
		{errNoTenant, kindForbidden},
		{errNoPrincipal, kindNoPrincipal},
		// Every other validate error, and anything unknown, is invalid_token.
		{validate.Error{Reason: "expired"}, kindInvalidToken},
		{validate.Error{Reason: "audience"}, kindInvalidToken},
		{validate.Error{Reason: "signature"}, kindInvalidToken},
		{validate.Error{Reason: "malformed"}, kindInvalidToken},
		{validate.Error{Reason: "inactive"}, kindInvalidToken},
		{errNilClaims, kindInvalidToken},
		{errors.New("custom validator error"), kindInvalidToken},
	}
	for _, tt := range tests {
		if got := kindOf(tt.err); got != tt.want {
			t.Errorf("kindOf(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// TestWriteMatchesChallengeWrite: every precomputed challenge answer is
// byte-identical to what challenge.Write sends for the same Challenge.
func TestWriteMatchesChallengeWrite(t *testing.T) {
	m := newFake(t, fakeValidator{claims: fakeClaims()}, func(c *Config) { c.Realm = "mcp" })
	for k, a := range m.answers {
		if a.challenge == "" {
			continue
		}
		cs, err := challenge.ParseAll([]string{a.challenge})
		if err != nil || len(cs) != 1 {
			t.Fatalf("kind %d: Parse(%q) = %v, %v", k, a.challenge, cs, err)
		}
		if got := cs[0].String(); got != a.challenge {
			t.Errorf("kind %d: round trip %q != %q", k, got, a.challenge)
		}
		if cs[0].Error == "" && a.status == http.StatusForbidden {
			// The terminal 403s: challenge.Write pairs a challenge without
			// an error code with 401.
			continue
		}
		want := httptest.NewRecorder()
		challenge.Write(want, cs[0])
		got := httptest.NewRecorder()
		writeAnswer(got, a.status, a.challenge, "", a.body)
		if g, w := string(golden.DumpResponse(got)), string(golden.DumpResponse(want)); g != w {
			t.Errorf("kind %d differs from challenge.Write:\n got %s\nwant %s", k, g, w)
		}
	}
}

// TestChallenge drives the exported Challenge with errors a custom handler
// may have.
func TestChallenge(t *testing.T) {
	m := newFake(t, fakeValidator{claims: fakeClaims()}, nil)
	withP := func(r *http.Request, scopes ...string) *http.Request {
		return r.WithContext(ContextWithPrincipal(r.Context(), &Principal{Issuer: "i", Subject: "s", ClientID: "c", Scopes: scopes}))
	}
	tests := []struct {
		name       string
		err        error
		legacy     bool
		principal  []string // granted scopes; nil: no principal
		wantStatus int
		wantHeader string
	}{
		{"scope error modern", Error{Reason: "insufficient_scope", Required: []string{"mcp", "files:write"}}, false, []string{"mcp"}, 403,
			`Bearer error="insufficient_scope", scope="mcp files:write", resource_metadata="` + metadataURL + `", error_description="The operation requires additional scope"`},
		{"scope error legacy union", Error{Reason: "insufficient_scope", Required: []string{"files:write"}}, true, []string{"mcp", "offline_access"}, 403,
			`Bearer error="insufficient_scope", scope="files:write mcp", resource_metadata="` + metadataURL + `", error_description="The operation requires additional scope"`},
		{"scope error no principal", Error{Reason: "insufficient_scope", Required: []string{"files:write"}}, true, nil, 403,
			`Bearer error="insufficient_scope", scope="files:write", resource_metadata="` + metadataURL + `", error_description="The operation requires additional scope"`},
		{"bare sentinel uses base scopes", errInsufficientScope, false, []string{}, 403,
			`Bearer error="insufficient_scope", scope="mcp", resource_metadata="` + metadataURL + `", error_description="The operation requires additional scope"`},
		{"tenant mismatch", errTenantMismatch, false, []string{"mcp"}, 403, `Bearer resource_metadata="` + metadataURL + `"`},
		{"no principal", errNoPrincipal, false, nil, 401, `Bearer scope="mcp", resource_metadata="` + metadataURL + `"`},
		{"unknown error", errors.New("boom"), false, nil, 401,
			`Bearer error="invalid_token", scope="mcp", resource_metadata="` + metadataURL + `", error_description="The access token is invalid"`},
		{"header mismatch", errMethodMismatch, false, nil, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, resource, nil)
			if !tt.legacy {
				r.Header.Set("MCP-Protocol-Version", modernRev)
			}
			if tt.principal != nil {
				r = withP(r, tt.principal...)
			}
			rec := httptest.NewRecorder()
			m.Challenge(rec, r, tt.err)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tt.wantHeader {
				t.Errorf("WWW-Authenticate =\n %s\nwant\n %s", got, tt.wantHeader)
			}
		})
	}
}

func TestAuthenticate(t *testing.T) {
	tests := []struct {
		name          string
		v             TokenValidator
		auth          string
		wantErr       error
		wantPrincipal bool
	}{
		{"ok", fakeValidator{claims: fakeClaims("mcp")}, "Bearer x", nil, true},
		{"missing base scope", fakeValidator{claims: fakeClaims("other")}, "Bearer x", errInsufficientScope, true},
		{"no token", fakeValidator{claims: fakeClaims("mcp")}, "", errNoToken, false},
		{"invalid token", fakeValidator{err: validate.Error{Reason: "expired"}}, "Bearer x", validate.Error{Reason: "expired"}, false},
		{"nil claims", nilValidator{}, "Bearer x", errNilClaims, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newFake(t, fakeValidator{}, func(c *Config) { c.Validator = tt.v })
			r := httptest.NewRequest(http.MethodPost, resource, stringsReader(`not json`))
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			p, err := m.Authenticate(r)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Authenticate() error = %v, want %v", err, tt.wantErr)
			}
			if (p != nil) != tt.wantPrincipal {
				t.Errorf("Authenticate() principal = %v, want present = %t", p, tt.wantPrincipal)
			}
			var se Error
			if errors.As(err, &se) && (len(se.Missing) != 1 || se.Missing[0] != "mcp") {
				t.Errorf("Error = %+v, want Missing [mcp]", se)
			}
			b := make([]byte, 16)
			if n, _ := r.Body.Read(b); string(b[:n]) != "not json" {
				t.Errorf("Authenticate read the body")
			}
		})
	}
}

// nilValidator returns no claims and no error: a broken custom validator,
// which must fail closed.
type nilValidator struct{}

func (nilValidator) Validate(context.Context, string) (*validate.Claims, error) { return nil, nil }

// TestLogging: the internal cause reaches the log, never the response, and
// the token never reaches either.
func TestLogging(t *testing.T) {
	f := newFixture(t, nil)
	var logBuf strings.Builder
	fl := f.with(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	tok := fl.iss.Token(t, authtest.Expired())
	r := httptest.NewRequest(http.MethodGet, resource, nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	fl.m.Handler(echoHandler()).ServeHTTP(rec, r)
	logs := logBuf.String()
	if !strings.Contains(logs, validate.Error{Reason: "expired"}.Error()) || !strings.Contains(logs, "status=401") {
		t.Errorf("log lacks the cause: %q", logs)
	}
	if strings.Contains(logs, tok) || strings.Contains(rec.Body.String(), tok) {
		t.Error("token leaked into the log or the response")
	}
	resp := string(golden.DumpResponse(rec))
	if strings.Contains(resp, "expired") || strings.Contains(resp, "validate:") {
		t.Errorf("internal error text in the response: %s", resp)
	}
	// Warn level for 503.
	logBuf.Reset()
	m := newFake(t, fakeValidator{err: fmt.Errorf("%w: jwks fetch: dial tcp: refused", validate.ErrKeysUnavailable)}, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	rec = httptest.NewRecorder()
	m.Handler(echoHandler()).ServeHTTP(rec, r)
	if !strings.Contains(logBuf.String(), "level=WARN") || !strings.Contains(logBuf.String(), "dial tcp") {
		t.Errorf("503 cause not logged at WARN: %q", logBuf.String())
	}
	if strings.Contains(rec.Body.String(), "dial") {
		t.Errorf("internal error text in the 503 body: %s", rec.Body)
	}
}
