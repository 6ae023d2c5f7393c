// Package inspector holds the tests of browser and Inspector clients (the
// MCP Inspector CLI and web UI, and a page of plain fetch() calls in
// chromium) against the example server: a package of their own, beside
// integration/, so that go test runs them in parallel with it under
// their own timeout. This directory is also the Node package (MCP
// Inspector, puppeteer-core) they run.
package inspector

import (
	"testing"

	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/integration/internal/exampleproc"
)

// baseScope is the example's base scope, what every tool needs.
const baseScope = "mcp:tools"

// annotatedTools is the example's tools/list in its default mode, each
// tool as "name=type[scopes]" of its SEP-1488 securitySchemes.
var annotatedTools = []string{
	"notes_list=oauth2[" + baseScope + " " + server.ScopeNotesRead + "]",
	"notes_write=oauth2[" + baseScope + " " + server.ScopeNotesWrite + "]",
	"whoami=oauth2[" + baseScope + "]",
}

// exampleBinary builds examples/mcpserver (exampleproc.Binary).
func exampleBinary(t *testing.T) string {
	t.Helper()
	return exampleproc.Binary(t)
}

// example is a running examples/mcpserver process.
type example struct {
	mcpURL string // the MCP endpoint, the resource
	issuer string // the authorization server it trusts
}

// syncBuf is a bytes.Buffer safe for a writer goroutine and readers.
type syncBuf = exampleproc.SyncBuf

// startExample runs the example server bin (exampleproc.Start).
func startExample(t *testing.T, bin string, env []string, args ...string) *example {
	t.Helper()
	e := exampleproc.Start(t, bin, env, args...)
	return &example{mcpURL: e.MCPURL, issuer: e.Issuer}
}
