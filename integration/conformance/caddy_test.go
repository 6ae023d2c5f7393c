package conformance

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/heldport"
)

// caddyModule is the directory of the Caddy module, its own Go module
// (docs/caddy.md).
var caddyModule = filepath.Join("..", "..", "caddy")

// buildCaddy builds Caddy with the mcpguard module (caddy/cmd/caddy) into
// dir and returns the binary's path.
func buildCaddy(t *testing.T, dir string) string {
	bin, err := filepath.Abs(filepath.Join(dir, "caddy"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/caddy")
	cmd.Dir = caddyModule
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/caddy in %s: %v\n%s", caddyModule, err, out)
	}
	return bin
}

// startCaddy starts Caddy with the module in front of upstream, configured
// by the proxy ways' file (every operation public), serving
// https://127.0.0.1:port with a certificate of its local CA (tls
// internal; no admin endpoint, no HTTP/3, nothing saved), and, for the
// scenarios the suite cannot run over TLS (overTLS), http://127.0.0.1:port2
// with the module configured alike for that resource. It returns the MCP
// endpoint's URLs (https, http), the process and the CA certificate's
// path, which exists once Caddy has started.
func startCaddy(t *testing.T, bin, dir, name, upstream string, ports *heldport.Ports) (string, string, *proc, string) {
	addr, plainAddr := ports.Take(), ports.Take()
	resource, plain := "https://"+addr+"/mcp", "http://"+plainAddr+"/mcp"
	file := writeProxyConfig(t, dir, name+"-caddy", resource, upstream, nil, newIssuer(t, resource).URL)
	plainFile := writeProxyConfig(t, dir, name+"-caddy-plain", plain, upstream, nil, newIssuer(t, plain).URL)
	// No host matcher: the suite's DNS-rebinding scenario sends another
	// Host, which mcpguard must refuse itself.
	routes := func(file string) []any {
		return []any{map[string]any{"handle": []any{
			map[string]any{"handler": "mcpguard", "config_file": file},
			map[string]any{"handler": "static_response", "status_code": 418},
		}}}
	}
	data := filepath.Join(dir, name+"-caddy-data")
	cfg, err := json.Marshal(map[string]any{
		"admin": map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
		"apps": map[string]any{
			"http": map[string]any{"servers": map[string]any{
				"mcp": map[string]any{
					"listen":                  []string{addr},
					"protocols":               []string{"h1", "h2"},
					"tls_connection_policies": []any{map[string]any{}},
					"automatic_https":         map[string]any{"disable_redirects": true},
					"routes":                  routes(file),
				},
				"plain": map[string]any{
					"listen":          []string{plainAddr},
					"protocols":       []string{"h1"},
					"automatic_https": map[string]any{"disable": true},
					"routes":          routes(plainFile),
				},
			}},
			"pki": map[string]any{"certificate_authorities": map[string]any{"local": map[string]any{"install_trust": false}}},
			"tls": map[string]any{
				"certificates": map[string]any{"automate": []string{"127.0.0.1"}},
				"automation": map[string]any{"policies": []any{map[string]any{
					"subjects": []string{"127.0.0.1"}, "issuers": []any{map[string]any{"module": "internal"}},
				}}},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, name+"-caddy.json")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "caddy "+name, "", []string{"XDG_DATA_HOME=" + data, "XDG_CONFIG_HOME=" + data, "HOME=" + data}, bin, "run", "--config", cfgFile)
	p.addr, p.target, p.plain = addr, resource, plain
	return resource, plain, p, filepath.Join(data, "caddy", "pki", "authorities", "local", "root.crt")
}

// throughCaddy is the probe of a Caddy: trusting only its CA ca, its
// module is ready (/readyz 200 over TLS) and forwards to the upstream,
// over TLS and over its plain-HTTP listener.
func throughCaddy(ca string) func(*proc) error {
	return func(p *proc) error {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return errors.New("no certificate in " + ca)
		}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
		defer c.CloseIdleConnections()
		resp, err := c.Get("https://" + p.addr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET https://%s/readyz: %s", p.addr, resp.Status)
		}
		if err := forwards(c, p.target); err != nil {
			return err
		}
		plain := &http.Client{Timeout: 5 * time.Second}
		defer plain.CloseIdleConnections()
		return forwards(plain, p.plain)
	}
}
