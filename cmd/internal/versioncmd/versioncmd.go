// Package versioncmd is "mcpguard version": the module version, the VCS
// revision and the Go version the binary was built with, read from its
// build information (runtime/debug.ReadBuildInfo).
//
// Exit codes: 0, or 2 for a usage error.
package versioncmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

// Run is "mcpguard version": args are the arguments after the
// subcommand's name.
func Run(_ context.Context, args []string, _ func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpguard version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpguard version: unexpected arguments: %q\n", fs.Args())
		return 2
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	write(stdout, bi)
	return 0
}

// write prints the version lines of bi (nil: a binary without build
// information).
func write(w io.Writer, bi *debug.BuildInfo) {
	version, goVersion, rev, when, modified := "(unknown)", "(unknown)", "(unknown)", "", ""
	if bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version // "(devel)" for a build from a clone
		}
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (modified)"
				}
			}
		}
	}
	fmt.Fprintf(w, "mcpguard %s\n", version)
	fmt.Fprintf(w, "  revision: %s%s\n", rev, modified)
	if when != "" {
		fmt.Fprintf(w, "  committed: %s\n", when)
	}
	fmt.Fprintf(w, "  go: %s\n", goVersion)
}
