// Command mcpserver runs the mcpguard example: an MCP server (official
// go-sdk, Streamable HTTP) whose tools are protected by mcpguard, with an
// embedded development authorization server unless -issuer names a real
// one.
//
//	go run ./examples/mcpserver
//
// See docs/example.md for a walk-through and server.Config for what the
// server does. Every flag can also be set in the environment as
// MCPGUARD_<FLAG>, with dashes as underscores (MCPGUARD_DEV_AS_ADDR).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}
