// Command apidump writes the exported API of the module's public packages,
// one line per exported identifier, in the style of the Go project's api/
// files:
//
//	pkg github.com/mcpguard/mcpguard/prm, func New(Config) (*Handler, error)
//	pkg github.com/mcpguard/mcpguard/prm, type Config struct
//	pkg github.com/mcpguard/mcpguard/prm, type Config struct, Resource string
//	pkg github.com/mcpguard/mcpguard/prm, method (*Handler) ServeHTTP(http.ResponseWriter, *http.Request)
//
// Run it from the module root to regenerate the committed file:
//
//	go run ./internal/apidump -w
//
// Without -w it prints the API and a count of exported identifiers per
// package. The packages are those of go list ./..., less main packages,
// internal packages, examples and integration. Types come from the
// compiler's export data (go list -export), so the only dependency is the
// go command.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// File is the committed API file, relative to the module root.
const File = "api/mcpguard.txt"

func main() {
	write := flag.Bool("w", false, "write "+File+" instead of printing")
	counts := flag.Bool("count", false, "print the count of exported identifiers per package (package-level names and methods)")
	flag.Parse()
	lines, err := Dump(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "apidump:", err)
		os.Exit(1)
	}
	if *counts {
		printCounts(os.Stdout, lines)
		return
	}
	out := strings.Join(lines, "\n") + "\n"
	if !*write {
		fmt.Print(out)
		return
	}
	if err := os.WriteFile(File, []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "apidump:", err)
		os.Exit(1)
	}
}

func printCounts(w io.Writer, lines []string) {
	c := Count(lines)
	pkgs := make([]string, 0, len(c))
	total := 0
	for p, n := range c {
		pkgs = append(pkgs, p)
		total += n
	}
	sort.Strings(pkgs)
	core := 0
	for _, p := range pkgs {
		mark := ""
		if isCore(p) {
			core += c[p]
			mark = " (core)"
		}
		fmt.Fprintf(w, "%5d %s%s\n", c[p], p, mark)
	}
	fmt.Fprintf(w, "%5d core (the resource server: root, prm, challenge, asmeta, validate/..., middleware)\n", core)
	fmt.Fprintf(w, "%5d total\n", total)
}

// isCore reports whether p is part of the resource-server core that
// issue #26 bounds separately.
func isCore(p string) bool {
	rel, ok := strings.CutPrefix(p, module)
	if !ok {
		return false
	}
	switch rel {
	case "", "/prm", "/challenge", "/asmeta", "/validate", "/middleware":
		return true
	}
	return strings.HasPrefix(rel, "/validate/")
}

const module = "github.com/mcpguard/mcpguard"
