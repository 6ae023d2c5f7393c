package audit

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps enforces the layering in docs/DESIGN.md: the audit is a
// black-box client. It reuses the leaves (challenge, prm), asmeta and
// internal/fetch, and builds tokens with go-jose; it never imports the
// server side (validate, middleware), test support or an MCP SDK, so a
// verdict never depends on mcpguard's own server code.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Allowed: []string{
			deptest.Module + "/asmeta",
			deptest.Module + "/challenge",
			deptest.Module + "/prm",
			deptest.Module + "/internal/fetch",
			deptest.Module + "/internal/strictjson", // through asmeta: the one JSON reader
			deptest.Module + "/internal/scopetoken",
			deptest.Module + "/internal/keyalg",    // the proxy's assertion key rule, a leaf
			deptest.Module + "/internal/httptoken", // through challenge
			"code.dny.dev/ssrf",
			"github.com/go-jose/go-jose/v4/...",
			"github.com/go-json-experiment/json/...",
		},
	}.Check(t, ".")
}
