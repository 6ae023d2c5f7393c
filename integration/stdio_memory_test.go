package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/proxy"
)

// requireMemoryServer returns node and the memory server's package
// directory (integration/upstreams' lockfile), or skips (fails under CI).
func requireMemoryServer(t *testing.T) (string, string) {
	t.Helper()
	node := requireUpstreamsNode(t)
	pkg, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules", "@modelcontextprotocol", "server-memory"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(pkg, "dist", "index.js")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("@modelcontextprotocol/server-memory is not installed (CI is set, so this test may not skip): run npm ci in integration/upstreams")
		}
		t.Skip("@modelcontextprotocol/server-memory is not installed: run npm ci in integration/upstreams")
	}
	return node, pkg
}

// privateMemoryServer is the memory server's package copied to a
// directory of the test's own (its script and package.json, its
// dependencies reached through a node_modules link to
// integration/upstreams'): the same code, whose default graph file,
// beside the script, is then the test's and not the shared install's.
func privateMemoryServer(t *testing.T, pkg string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", filepath.Join("dist", "index.js")} {
		b, err := os.ReadFile(filepath.Join(pkg, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mods, err := filepath.Abs(filepath.Join(upstreamsDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mods, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "dist", "index.js")
}

// memGraph is the knowledge graph a memory tool answers.
type memGraph struct {
	Entities []struct {
		Name         string   `json:"name"`
		Observations []string `json:"observations"`
	} `json:"entities"`
}

func (g memGraph) names() []string {
	var out []string
	for _, e := range g.Entities {
		out = append(out, e.Name)
	}
	slices.Sort(out)
	return out
}

// memCall calls a memory server tool and returns its text; a tool error
// fails the test.
func memCall(ctx context.Context, t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	got, refused := fsCall(ctx, t, cs, tool, args)
	if refused {
		t.Fatalf("%s: tool error: %s", tool, got)
	}
	return got
}

// memNames calls a memory server tool that answers a graph and returns
// the names of its entities.
func memNames(ctx context.Context, t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) []string {
	t.Helper()
	text := memCall(ctx, t, cs, tool, args)
	var g memGraph
	if err := json.Unmarshal([]byte(text), &g); err != nil {
		t.Fatalf("%s: %v in %q", tool, err, text)
	}
	return g.names()
}

// TestStdioMemoryServer: the reference memory server behind mcpguard
// proxy, a process per user, each in its own templated directory.
//
// A process per user is not enough for this server: it keeps its
// knowledge graph in the file MEMORY_FILE_PATH names, by default
// memory.jsonl beside its own script (a relative value is taken from
// there too, not from the working directory), so every user's child
// reads and writes one file. "shared file without MEMORY_FILE_PATH"
// shows that leak as it is: bob's read_graph, search_nodes and
// open_nodes answer alice's entity. (It runs the server's script from a
// private copy, so that the default file is the test's own rather than
// the shared install's, which concurrent runs would also write.)
//
// "per-user file" sets env MEMORY_FILE_PATH: "{dir}/memory.jsonl": each
// child's graph is in its user's directory, no tool of bob's answers
// alice's entity, and a second client of alice (a stateless one,
// served by another process of hers) sees her graph.
func TestStdioMemoryServer(t *testing.T) {
	node, pkg := requireMemoryServer(t)
	t.Parallel()
	const aliceEntity, aliceNote, bobEntity = "alice-project-x", "alice's secret plan", "bob-groceries"
	// run starts a proxy with one memory server route and has alice and
	// bob each create an entity; it returns bob's view of the graph by
	// read_graph, search_nodes "alice" and open_nodes [aliceEntity].
	run := func(t *testing.T, entry string, env map[string]string) (base string, alice *mcp.ClientSession, bobViews [][]string, connect func(string, string) *mcp.ClientSession) {
		base, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		p := newStdioProxied(t, proxy.Stdio{Command: []string{node, entry}, Env: env, PassEnv: []string{"PATH", "HOME"},
			Dir: filepath.Join(base, "{tenant}", "{subject}")})
		ctx := testContext(t)
		connect = func(sub, rev string) *mcp.ClientSession {
			c := mcp.NewClient(&mcp.Implementation{Name: "memory-client", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.resource, HTTPClient: &http.Client{Transport: tokenRT{p.token(t, sub), nil}}},
				&mcp.ClientSessionOptions{ProtocolVersion: rev})
			if err != nil {
				t.Fatalf("Connect %s: %v", sub, err)
			}
			t.Cleanup(func() { cs.Close() })
			return cs
		}
		alice = connect("alice", rev20251125)
		memCall(ctx, t, alice, "create_entities", map[string]any{"entities": []any{
			map[string]any{"name": aliceEntity, "entityType": "project", "observations": []string{aliceNote}}}})
		bob := connect("bob", rev20251125)
		memCall(ctx, t, bob, "create_entities", map[string]any{"entities": []any{
			map[string]any{"name": bobEntity, "entityType": "list", "observations": []string{"milk"}}}})
		bobViews = [][]string{
			memNames(ctx, t, bob, "read_graph", map[string]any{}),
			memNames(ctx, t, bob, "search_nodes", map[string]any{"query": "alice"}),
			memNames(ctx, t, bob, "open_nodes", map[string]any{"names": []string{aliceEntity}}),
		}
		return base, alice, bobViews, connect
	}

	t.Run("per-user file", func(t *testing.T) {
		t.Parallel()
		entry := filepath.Join(pkg, "dist", "index.js")
		base, alice, bobViews, connect := run(t, entry, map[string]string{"MEMORY_FILE_PATH": "{dir}/memory.jsonl"})
		ctx := testContext(t)
		for i, want := range [][]string{{bobEntity}, nil, nil} {
			if !slices.Equal(bobViews[i], want) {
				t.Errorf("bob's %s = %q, want %q", []string{"read_graph", `search_nodes "alice"`, "open_nodes"}[i], bobViews[i], want)
			}
		}
		if got := memNames(ctx, t, alice, "read_graph", map[string]any{}); !slices.Equal(got, []string{aliceEntity}) {
			t.Errorf("alice's read_graph = %q, want only her entity", got)
		}
		// A stateless client of alice: another process of hers, the same
		// directory and so the same graph.
		if got := memNames(ctx, t, connect("alice", rev20260728), "open_nodes", map[string]any{"names": []string{aliceEntity, bobEntity}}); !slices.Equal(got, []string{aliceEntity}) {
			t.Errorf("alice's stateless open_nodes = %q, want only her entity", got)
		}
		for _, f := range []struct{ user, has, hasNot string }{{"alice", aliceNote, bobEntity}, {"bob", bobEntity, aliceEntity}} {
			b, err := os.ReadFile(filepath.Join(base, "acme", f.user, "memory.jsonl"))
			if err != nil || !strings.Contains(string(b), f.has) || strings.Contains(string(b), f.hasNot) {
				t.Errorf("%s's graph file: %q, %v; want %q in it and not %q", f.user, b, err, f.has, f.hasNot)
			}
		}
	})

	t.Run("shared file without MEMORY_FILE_PATH", func(t *testing.T) {
		t.Parallel()
		entry := privateMemoryServer(t, pkg)
		base, _, bobViews, _ := run(t, entry, nil)
		// The leak, asserted as it is: the proxy gives alice and bob
		// separate processes in separate directories, and bob's tools
		// still answer alice's entity, read from the one default file.
		t.Logf("without MEMORY_FILE_PATH, bob's read_graph answers %q", bobViews[0])
		for i, want := range [][]string{{aliceEntity, bobEntity}, {aliceEntity}, {aliceEntity}} {
			if !slices.Equal(bobViews[i], want) {
				t.Errorf("bob's %s = %q, want %q (the server's default file is shared by every child)",
					[]string{"read_graph", `search_nodes "alice"`, "open_nodes"}[i], bobViews[i], want)
			}
		}
		shared := filepath.Join(filepath.Dir(entry), "memory.jsonl")
		if b, err := os.ReadFile(shared); err != nil || !strings.Contains(string(b), aliceNote) || !strings.Contains(string(b), bobEntity) {
			t.Errorf("the default file %s: %q, %v; want both users' entities", shared, b, err)
		}
		for _, user := range []string{"alice", "bob"} {
			if _, err := os.Stat(filepath.Join(base, "acme", user, "memory.jsonl")); err == nil {
				t.Errorf("a graph file in %s's directory without MEMORY_FILE_PATH", user)
			}
		}
	})
}
