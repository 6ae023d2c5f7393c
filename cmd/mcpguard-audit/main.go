// Command mcpguard-audit is the old name of "mcpguard audit", kept so that
// go run github.com/mcpguard/mcpguard/cmd/mcpguard-audit@latest and existing
// CI jobs keep working. It takes the same flags and exits the same way, and
// says on stderr that it is deprecated. Use cmd/mcpguard instead:
//
//	go run github.com/mcpguard/mcpguard/cmd/mcpguard@latest audit https://mcp.example.com/mcp
//
// Deprecated: use "mcpguard audit" (cmd/mcpguard).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpguard/mcpguard/cmd/internal/auditcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	os.Stderr.WriteString("mcpguard-audit is deprecated: use \"mcpguard audit\" (go run github.com/mcpguard/mcpguard/cmd/mcpguard@latest audit)\n")
	code := auditcmd.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
