package client

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

const self = deptest.Module + "/client"

// TestDeps fails if client imports anything beyond the standard library,
// challenge, prm, asmeta, internal/fetch (with its SSRF guard),
// golang.org/x/oauth2, go-jose and go-json-experiment's jsontext (DESIGN.md
// layering: client is an edge and must not grow the server packages'
// imports).
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{
			deptest.Module + "/challenge",
			deptest.Module + "/prm",
			deptest.Module + "/asmeta",
			deptest.Module + "/internal/fetch",
			deptest.Module + "/internal/strictjson", // through asmeta: the one JSON reader
			"code.dny.dev/ssrf",
			"github.com/go-json-experiment/json/...", // the strict JSON reader (jsontext)
			deptest.Module + "/internal/scopetoken",
			deptest.Module + "/internal/httptoken", // through challenge: the RFC 9110 token grammar
			deptest.Module + "/internal/keyalg",    // the default algorithm of a key, shared with introspect
			"golang.org/x/oauth2",
			"github.com/go-jose/go-jose/v4/...", // DPoP proofs (dpop.go)
			"golang.org/x/oauth2/internal",
			"golang.org/x/oauth2/clientcredentials",
		},
	}.Check(t, ".")
}

// TestNotImported fails if a non-test package of the module other than
// examples and the conformance suite's client program imports client.
func TestNotImported(t *testing.T) {
	deptest.CheckNotImported(t, self, deptest.Module+"/examples/...", deptest.Module+"/integration/conformance/client")
}
