package mcpguardcaddy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	mcpguardcaddy "github.com/mcpguard/mcpguard/caddy"
)

// TestUnmarshalCaddyfile: the directive's forms and refusals.
func TestUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		file     string
		config   string // the JSON of Config
		err      string
	}{
		{name: "file subdirective", in: "mcpguard {\n config_file /etc/m.yaml\n}", file: "/etc/m.yaml"},
		{name: "inline heredoc", in: "mcpguard {\n\tconfig <<YAML\n\troutes:\n\t  - resource: https://a.example/mcp\n\tYAML\n}",
			config: `"routes:\n  - resource: https://a.example/mcp"`},
		{name: "both", in: "mcpguard {\n config_file /a.yaml\n config <<Y\n x: 1\n Y\n}", err: "not both"},
		{name: "none", in: `mcpguard`, err: "required"},
		{name: "two files", in: "mcpguard {\n config_file /a.yaml\n config_file /b.yaml\n}", err: "wrong argument count"},
		{name: "argument", in: `mcpguard a.yaml`, err: "wrong argument count"},
		{name: "two values", in: "mcpguard {\n config_file /a.yaml /b.yaml\n}", err: "wrong argument count"},
		{name: "unknown", in: "mcpguard {\n upstream http://x\n}", err: `unknown subdirective "upstream"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h mcpguardcaddy.Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.ConfigFile != tc.file || string(h.Config) != tc.config {
				t.Errorf("config_file %q config %s, want %q %s", h.ConfigFile, h.Config, tc.file, tc.config)
			}
		})
	}
}

// TestProvisionErrors: the proxy's decoder and checks refuse, naming the
// source, the key or the route.
func TestProvisionErrors(t *testing.T) {
	route := `{"resource":"https://mcp.example.com/mcp","upstream":"http://127.0.0.1:1/mcp","issuers":["https://as.example.com"]}`
	for _, tc := range []struct {
		name string
		h    mcpguardcaddy.Handler
		err  string
	}{
		{"none", mcpguardcaddy.Handler{}, "mcpguard: config_file or config is required"},
		{"both", mcpguardcaddy.Handler{ConfigFile: "/x.yaml", Config: json.RawMessage(`{}`)}, "not both"},
		{"missing file", mcpguardcaddy.Handler{ConfigFile: "/nonexistent/mcpguard.yaml"}, "/nonexistent/mcpguard.yaml"},
		{"unknown key", mcpguardcaddy.Handler{Config: json.RawMessage(`{"routes":[{"resource":"https://a/mcp","upstrem":"x"}]}`)},
			`inline config:1:40: routes[0].upstrem: unknown key "upstrem"`},
		{"inline secret", mcpguardcaddy.Handler{Config: json.RawMessage(`{"redis":{"addr":"127.0.0.1:1","password":"p"}}`)}, "redis.password"},
		{"yaml string", mcpguardcaddy.Handler{Config: json.RawMessage(`"routes:\n  - resource: 1\n    bogus: 2\n"`)}, `routes[0].bogus: unknown key "bogus"`},
		{"no routes", mcpguardcaddy.Handler{Config: json.RawMessage(`{"routes":[]}`)}, "mcpguard: inline config: proxy: invalid config: routes: at least one route is required"},
		{"bad route", mcpguardcaddy.Handler{Config: json.RawMessage(`{"routes":[` + strings.Replace(route, "https://mcp", "ftp://mcp", 1) + `]}`)}, "mcpguard: inline config: proxy: invalid config: routes[0].resource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			h := tc.h
			err := h.Provision(ctx)
			if err == nil {
				err = h.Validate()
			}
			defer h.Cleanup()
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want one containing %q", err, tc.err)
			}
		})
	}
}
