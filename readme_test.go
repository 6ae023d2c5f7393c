package mcpguard_test

import (
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/gosdk"
	"github.com/mcpguard/mcpguard/mcpgo"
	"github.com/mcpguard/mcpguard/middleware"
)

// The functions below hold every Go snippet of README.md, between
// "// README snippet" and "// end" lines, so that the compiler checks them;
// TestREADMESnippets holds the README to them. They are never called.

func readmeGoSDK(srv *mcp.Server) {
	// README snippet
	g, err := mcpguard.New(mcpguard.Config{
		Resource:    "https://mcp.example.com/mcp",        // audience, PRM resource, source of every challenge URL
		Issuers:     []string{"https://auth.example.com"}, // metadata and JWKS are discovered
		Scopes:      []string{"mcp:tools"},                // every request needs these
		Operations:  middleware.OperationPolicy{Tools: map[string][]string{"notes_write": {"notes:write"}}},
		WaitForKeys: 10 * time.Second, // a wrong issuer stops start-up, naming the cause
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	a, err := gosdk.New(gosdk.Config{Middleware: g.Middleware()})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	g.Mount(mux, a.TokenInfo(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	mux.Handle("/readyz", g.ReadyHandler())
	// In a tool handler: p, ok := middleware.PrincipalFromContext(ctx)
	// end
}

func readmeMCPGo(g *mcpguard.Guard, mux *http.ServeMux, mcpServer *server.MCPServer) {
	// README snippet
	a, err := mcpgo.New(mcpgo.Config{Middleware: g.Middleware()}) // Stateless: true for WithStateLess
	if err != nil {
		log.Fatal(err)
	}
	s := server.NewStreamableHTTPServer(mcpServer, a.Options()...) // a's options last
	g.Mount(mux, a.Bind(s))
	// end
}

func readmeRoutes(g *mcpguard.Guard, r *mux.Router, sm *http.ServeMux, admin, hook http.Handler) {
	// README snippet
	m := g.Middleware()
	api := r.PathPrefix("/api").Subrouter()
	api.Use(m.Protect())                                          // any valid token with the base scopes
	api.Handle("/admin", m.RequireScopes("admin")(admin))         // per-route step-up
	sm.Handle("POST /hooks/{id}", m.Protect("hooks:write")(hook)) // http.ServeMux pattern
	// end
}

var _ = []any{readmeGoSDK, readmeMCPGo, readmeRoutes}

// normalize drops each line's indentation and the white space that gofmt
// aligns comments with, so that a snippet compares equal however it is
// indented.
func normalize(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// readmeBlocks returns the bodies of the fenced blocks of lang ("go",
// "sh") in text, a README or a part of it, in order.
func readmeBlocks(text, lang string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(text, "```"+lang+"\n")[1:] {
		body, _, ok := strings.Cut(part, "```")
		if !ok {
			return nil, fmt.Errorf("README: a %s block without its end", lang)
		}
		out = append(out, body)
	}
	return out, nil
}

// TestREADMESnippets fails when a Go snippet of README.md is not, line for
// line, one of the compiled snippets above, or when one of those is not
// in the README any more.
func TestREADMESnippets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var compiled []string
	for _, part := range strings.Split(string(self), "// README snippet\n")[1:] {
		body, _, ok := strings.Cut(part, "// end\n")
		if !ok {
			t.Fatal("a README snippet without its end line")
		}
		compiled = append(compiled, normalize(body))
	}
	var inREADME []string
	blocks, err := readmeBlocks(string(readme), "go")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		inREADME = append(inREADME, normalize(b))
	}
	if len(inREADME) != len(compiled) {
		t.Fatalf("README has %d Go snippets, readme_test.go compiles %d", len(inREADME), len(compiled))
	}
	for i := range inREADME {
		if inREADME[i] != compiled[i] {
			t.Errorf("README Go snippet %d differs from the compiled one:\nREADME:\n%s\ncompiled:\n%s", i+1, inREADME[i], compiled[i])
		}
	}
}
