// Command mcpguard is mcpguard's one binary. Its subcommands:
//
//	mcpguard audit [flags] URL   check a live MCP endpoint's authorization, black-box (docs/audit.md)
//	mcpguard proxy [flags]       protect any Streamable HTTP MCP server as a reverse proxy (docs/proxy.md)
//	mcpguard version             print the module version, VCS revision and Go version
//
// Install it with
//
//	go install github.com/mcpguard/mcpguard/cmd/mcpguard@latest
//
// or run it from a clone with go run ./cmd/mcpguard audit URL. Each
// subcommand lives in its own package under cmd/internal and documents its
// flags and exit codes; mcpguard itself exits 2 for an unknown or missing
// subcommand.
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
