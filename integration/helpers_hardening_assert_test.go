package integration

// Exact expected answers of the hardening suites' example server (see
// helpers_hardening_env_test.go).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// hxWant is an exact expected answer.
type hxWant struct {
	status     int
	challenge  string // exact WWW-Authenticate; "" means the header must be absent
	body       string // exact body; "" for 200 (checked as a JSON-RPC success)
	retryAfter string // exact Retry-After; "" means absent
	// notMiddleware marks an answer of the MCP SDK handler rather than of
	// the middleware: its Cache-Control is not checked.
	notMiddleware bool
}

// Expected answers of the example server, built from its resource_metadata
// URL exactly as middleware renders them (middleware/errmap.go and the
// golden files in middleware/testdata).
func (e *hxEnv) wantOK() hxWant { return hxWant{status: http.StatusOK} }

func (e *hxEnv) wantInvalidToken() hxWant {
	return hxWant{
		status: http.StatusUnauthorized,
		challenge: `Bearer error="invalid_token", scope="` + hxBaseScope + `", resource_metadata="` + e.metaURL +
			`", error_description="The access token is invalid"`,
		body: `{"error":"invalid_token"}`,
	}
}

func (e *hxEnv) wantNoToken() hxWant {
	return hxWant{
		status:    http.StatusUnauthorized,
		challenge: `Bearer scope="` + hxBaseScope + `", resource_metadata="` + e.metaURL + `"`,
		body:      `{"error":"unauthorized"}`,
	}
}

// Fixed error_description texts of the 400 invalid_request answers.
const (
	hxDescMalformed = "Malformed Bearer authorization header"
	hxDescMultiple  = "Send exactly one Authorization header"
	hxDescQuery     = "Access tokens must not be sent in the URL query"
)

func (e *hxEnv) wantInvalidRequest(desc string) hxWant {
	return hxWant{
		status:    http.StatusBadRequest,
		challenge: `Bearer error="invalid_request", resource_metadata="` + e.metaURL + `", error_description="` + desc + `"`,
		body:      `{"error":"invalid_request"}`,
	}
}

// wantInsufficient is the 403 of a 2026-07-28 request whose operation
// needs scopes (operation-only scope list).
func (e *hxEnv) wantInsufficient(scopes ...string) hxWant {
	return hxWant{
		status: http.StatusForbidden,
		challenge: `Bearer error="insufficient_scope", scope="` + strings.Join(scopes, " ") + `", resource_metadata="` +
			e.metaURL + `", error_description="The operation requires additional scope"`,
		body: `{"error":"insufficient_scope"}`,
	}
}

// wantUnavailable is the 503 sent while no key set could be obtained: no
// challenge (the token was not judged), Retry-After of the middleware
// default (30s).
func (e *hxEnv) wantUnavailable() hxWant {
	return hxWant{status: http.StatusServiceUnavailable, body: `{"error":"temporarily_unavailable"}`, retryAfter: "30"}
}

// wantProxyHostRefused is mcpguard proxy's own 403 for a foreign Host on
// a loopback listener, before any token check (docs/proxy.md, "DNS
// rebinding: the Host check"): its JSON-RPC error shape, id null (the
// body is not read), no challenge, no-store.
func (e *hxEnv) wantProxyHostRefused() hxWant {
	return hxWant{status: http.StatusForbidden, body: `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Forbidden"}}` + "\n"}
}

// check compares got with w exactly, reporting every difference.
func (w hxWant) check(t testing.TB, got hxResp) {
	t.Helper()
	if err := w.diff(got); err != "" {
		t.Error(err)
	}
}

// diff returns "" if got matches w, else a description.
func (w hxWant) diff(got hxResp) string {
	var errs []string
	if got.status != w.status {
		errs = append(errs, fmt.Sprintf("status = %d, want %d", got.status, w.status))
	}
	switch {
	case w.challenge == "" && len(got.wwwAuth) != 0:
		errs = append(errs, fmt.Sprintf("WWW-Authenticate = %q, want none", got.wwwAuth))
	case w.challenge != "" && (len(got.wwwAuth) != 1 || got.wwwAuth[0] != w.challenge):
		errs = append(errs, fmt.Sprintf("WWW-Authenticate = %q\n\twant [%q]", got.wwwAuth, w.challenge))
	}
	switch {
	case w.retryAfter == "" && len(got.retryAfter) != 0:
		errs = append(errs, fmt.Sprintf("Retry-After = %q, want none", got.retryAfter))
	case w.retryAfter != "" && (len(got.retryAfter) != 1 || got.retryAfter[0] != w.retryAfter):
		errs = append(errs, fmt.Sprintf("Retry-After = %q, want [%q]", got.retryAfter, w.retryAfter))
	}
	if w.status == http.StatusOK {
		var rpc struct {
			Result *struct {
				IsError bool `json:"isError"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(got.body, &rpc); err != nil || rpc.Result == nil || rpc.Result.IsError || rpc.Error != nil {
			errs = append(errs, fmt.Sprintf("body = %.300s, want a successful tool result", got.body))
		}
	} else {
		if string(got.body) != w.body {
			errs = append(errs, fmt.Sprintf("body = %.300q, want %q", got.body, w.body))
		}
		if got.cache != "no-store" && !w.notMiddleware {
			errs = append(errs, fmt.Sprintf("Cache-Control = %q, want no-store", got.cache))
		}
	}
	return strings.Join(errs, "; ")
}
