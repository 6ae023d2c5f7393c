package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

func TestParseFlagsTokenMode(t *testing.T) {
	defaults := func(mut func(*options)) options {
		o := options{addr: "127.0.0.1:8080", devASAddr: "127.0.0.1:9000", scopes: []string{"mcp:tools"}, tenantClaim: "tenant", logLevel: slog.LevelInfo, devAutoApprove: true}
		mut(&o)
		return o
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    options
		wantErr string
	}{
		{name: "default is jwt", want: defaults(func(o *options) { o.tokenMode = modeJWT })},
		{
			name: "introspect from flags",
			args: []string{"-issuer", "https://as.example.com", "-token-mode", "introspect", "-introspection-endpoint", "https://as.example.com/introspect",
				"-introspection-client-id", "rs", "-introspection-client-secret", "s"},
			want: defaults(func(o *options) {
				o.issuer, o.tokenMode, o.introspectionEndpoint, o.introspectionClientID, o.introspectionClientSecret =
					"https://as.example.com", modeIntrospect, "https://as.example.com/introspect", "rs", "s"
			}),
		},
		{
			name: "hybrid from the environment",
			env: map[string]string{"MCPGUARD_TOKEN_MODE": "hybrid", "MCPGUARD_INTROSPECTION_CLIENT_ID": "rs",
				"MCPGUARD_INTROSPECTION_CLIENT_SECRET": "from-env", "MCPGUARD_INTROSPECTION_ENDPOINT": "https://as.example.com/i"},
			want: defaults(func(o *options) {
				o.tokenMode, o.introspectionClientID, o.introspectionClientSecret, o.introspectionEndpoint = modeHybrid, "rs", "from-env", "https://as.example.com/i"
			}),
		},
		{
			name: "command line wins",
			args: []string{"-token-mode", "jwt"},
			env:  map[string]string{"MCPGUARD_TOKEN_MODE": "introspect"},
			want: defaults(func(o *options) { o.tokenMode = modeJWT }),
		},
		{name: "unknown mode", args: []string{"-token-mode", "opaque"}, wantErr: "must be jwt, introspect or hybrid"},
		{name: "mode is case-sensitive", args: []string{"-token-mode", "JWT"}, wantErr: "must be jwt, introspect or hybrid"},
		{name: "unknown mode in env", env: map[string]string{"MCPGUARD_TOKEN_MODE": "x"}, wantErr: "MCPGUARD_TOKEN_MODE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFlags(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseFlags = %v, want an error mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.waitKeys == 0 {
				tt.want.waitKeys = defaultWaitKeys // ops: the -wait-keys default
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("options:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestRunTokenModeErrors(t *testing.T) {
	creds := []string{"-introspection-client-id", "rs", "-introspection-client-secret", "s"}
	tests := []struct {
		name   string
		args   []string
		wantIs error
	}{
		{name: "introspect without issuer", args: append([]string{"-token-mode", "introspect"}, creds...), wantIs: errIntrospectionNeedsIssuer},
		{name: "hybrid without issuer", args: append([]string{"-token-mode", "hybrid"}, creds...), wantIs: errIntrospectionNeedsIssuer},
		{name: "introspect without client", args: []string{"-issuer", "https://as.example.com", "-token-mode", "introspect"}, wantIs: errIntrospectionClient},
		{name: "introspect without secret", args: []string{"-issuer", "https://as.example.com", "-token-mode", "introspect", "-introspection-client-id", "rs"}, wantIs: errIntrospectionClient},
		{name: "client id with jwt mode", args: []string{"-introspection-client-id", "rs"}, wantIs: errIntrospectionFlagsUnused},
		{name: "endpoint with jwt mode", args: []string{"-issuer", "https://as.example.com", "-introspection-endpoint", "https://as.example.com/i"}, wantIs: errIntrospectionFlagsUnused},
		{name: "missing aud relaxation with jwt mode", args: []string{"-introspection-allow-missing-aud"}, wantIs: errIntrospectionFlagsUnused},
		{name: "missing sub relaxation with jwt mode", args: []string{"-introspection-allow-missing-sub"}, wantIs: errIntrospectionFlagsUnused},
		{
			name:   "http endpoint not loopback",
			args:   append([]string{"-issuer", "https://as.example.com", "-token-mode", "introspect", "-introspection-endpoint", "http://as.example.com/i"}, creds...),
			wantIs: introspect.ErrConfig,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			args := append([]string{"-addr", "127.0.0.1:0", "-dev-as-addr", "127.0.0.1:0", "-log-level", "error"}, tt.args...)
			err := run(ctx, args, noEnv, io.Discard, func(endpoints) {
				t.Errorf("server started")
				cancel()
			})
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("run = %v, want %v", err, tt.wantIs)
			}
		})
	}
}

// TestRunIntrospection runs the example against an authtest issuer in
// both introspection modes. run validates with the wall clock, so the
// issuer's clock is the wall clock too.
func TestRunIntrospection(t *testing.T) {
	const resource = "http://127.0.0.1:1/mcp" // the public URL; never dialled
	for _, mode := range []string{"introspect", "hybrid"} {
		t.Run(mode, func(t *testing.T) {
			iss := authtest.NewIssuer(t, authtest.IssuerConfig{Audience: resource, Now: time.Now})
			id, secret := iss.IntrospectionClientID, iss.IntrospectionSecret
			env := map[string]string{"MCPGUARD_INTROSPECTION_CLIENT_SECRET": secret}
			ep, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-issuer", iss.URL, "-resource", resource,
				"-token-mode", mode, "-introspection-client-id", id, "-log-level", "error"}, func(k string) string { return env[k] })
			if !strings.Contains(stderr.String(), "introspected") {
				t.Errorf("welcome text does not mention introspection:\n%s", stderr)
			}
			whoami := func(tok string) (int, string) {
				t.Helper()
				body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
				req, _ := http.NewRequest(http.MethodPost, "http://"+ep.Listen+"/mcp", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", "2025-11-25")
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			const want = `"structuredContent":{"client_id":"client-1","scopes":["mcp:tools"],"subject":"opaque-user","tenant":"tenant-x"}`
			status, body := whoami(iss.Token(t, authtest.Token{Opaque: true, Subject: "opaque-user", Tenant: "tenant-x"}))
			if status != http.StatusOK || !strings.Contains(body, want) {
				t.Errorf("opaque token: %d %s", status, body)
			}
			calls := iss.Requests(iss.IntrospectionURL)
			if calls != 1 {
				t.Errorf("introspection calls = %d, want 1", calls)
			}
			status, _ = whoami(iss.Token(t, authtest.Token{}))
			wantCalls := calls
			if mode == "introspect" {
				wantCalls++
			}
			if status != http.StatusOK || iss.Requests(iss.IntrospectionURL) != wantCalls {
				t.Errorf("JWT: status %d, introspection calls %d, want 200 and %d", status, iss.Requests(iss.IntrospectionURL), wantCalls)
			}
			if err := stop(); err != nil {
				t.Errorf("run = %v", err)
			}
		})
	}
}
