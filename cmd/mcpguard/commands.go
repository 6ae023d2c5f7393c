package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mcpguard/mcpguard/cmd/internal/auditcmd"
	"github.com/mcpguard/mcpguard/cmd/internal/proxycmd"
	"github.com/mcpguard/mcpguard/cmd/internal/versioncmd"
)

// exitUsage is the exit code of a missing or unknown subcommand (the
// subcommands use 2 for their own usage errors too).
const exitUsage = 2

// runFunc runs one subcommand: args are the arguments after its name,
// getenv reads the environment, and the result is the exit code. ctx ends
// on SIGINT or SIGTERM.
type runFunc func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     runFunc
}

// commands is the subcommand table, in the order of the usage text. A new
// subcommand is one entry here and one package under cmd/internal.
func commands() []command {
	return []command{
		{name: "audit", summary: "check a live MCP endpoint's authorization, black-box (docs/audit.md)", run: auditcmd.Run},
		{name: "proxy", summary: "protect any Streamable HTTP MCP server: mcpguard's authorization as a reverse proxy (docs/proxy.md)", run: proxycmd.Run},
		{name: "version", summary: "print the module version, VCS revision and Go version of this binary", run: versioncmd.Run},
	}
}

// run dispatches to the subcommand named by args[0].
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		usage(stderr, cmds)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout, cmds)
		return 0
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return c.run(ctx, args[1:], getenv, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "mcpguard: unknown subcommand %q\n", args[0])
	usage(stderr, cmds)
	return exitUsage
}

// usage lists the subcommands.
func usage(w io.Writer, cmds []command) {
	fmt.Fprintln(w, "usage: mcpguard <subcommand> [flags] [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "subcommands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `"mcpguard <subcommand> -h" lists its flags.`)
}
