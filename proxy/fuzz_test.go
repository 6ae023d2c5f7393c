package proxy_test

import (
	"errors"
	"testing"

	"github.com/mcpguard/mcpguard/proxy"
)

// FuzzParse: any configuration file is either decoded or refused with an
// error wrapping ErrConfig; never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte("routes:\n  - resource: https://a.example/mcp\n    upstrem: x\n"))
	f.Add([]byte("timeouts: {}\ntimeouts: {}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("routes: [{identity: {exchange: {client_secret: x}}}]\n"))
	f.Add([]byte("routes:\n  - upstream:\n      command: [srv]\n  - {\"upstream\": {command: [x]}, stdio: {}}\n"))
	env := func(string) string { return "" }
	f.Fuzz(func(t *testing.T, doc []byte) {
		if _, err := proxy.Parse("f.yaml", doc, env); err != nil && !errors.Is(err, proxy.ErrConfig) {
			t.Fatalf("error not wrapping ErrConfig: %v", err)
		}
	})
}
