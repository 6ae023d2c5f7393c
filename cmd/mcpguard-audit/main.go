// Command mcpguard-audit checks a live MCP endpoint's authorization,
// black-box, against the MCP authorization specification and the RFCs it
// builds on, and prints which rule holds and which does not.
//
//	go run github.com/mcpguard/mcpguard/cmd/mcpguard-audit@latest https://mcp.example.com/mcp
//
// Without credentials it checks discovery, challenges, metadata and the
// refusal of forged tokens; with -token (or client credentials) and
// -token2 it also checks step-up, that refused tools never run, session
// binding and tenant isolation. docs/audit.md lists every check, the
// flags and the exit codes: 0 when no check at or above -fail-on failed,
// 1 when one did, 2 for a usage error, 3 when the endpoint could not be
// audited.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
