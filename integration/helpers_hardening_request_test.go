package integration

// Requests to the hardening suites' example server and their answers (see
// helpers_hardening_env_test.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
)

// hxReq is one HTTP request to the MCP endpoint. The zero value is a
// 2026-07-28 tools/call of notes_write without credentials.
type hxReq struct {
	method string   // default POST
	authz  []string // Authorization field lines, sent as given; nil sends none
	query  string   // raw query, appended after "?"
	host   string   // Host header; empty means the server's address
	header map[string]string
	// contentType and body replace the JSON-RPC message when body is set.
	contentType string
	body        []byte
	tool        string // default notes_write
	text        string // the note text of notes_write
}

// hxBearer returns one "Bearer <tok>" Authorization line.
func hxBearer(tok string) []string { return []string{"Bearer " + tok} }

// hxResp is the answer to an hxReq.
type hxResp struct {
	status     int
	wwwAuth    []string
	retryAfter []string
	cache      string
	body       []byte
	bodyRead   int64 // bytes the server's handlers read from the request body
	latency    time.Duration
	id         string // the request's hxRequestID
}

// hxToolBody returns a self-contained 2026-07-28 tools/call message.
func hxToolBody(tool string, args map[string]any) []byte {
	b, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{
			"name": tool, "arguments": args,
			"_meta": map[string]any{
				"io.modelcontextprotocol/protocolVersion":    hxRevision,
				"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "hx", "version": "0"},
				"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			},
		},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// do sends r and returns the answer; a transport error fails the test.
func (e *hxEnv) do(ctx context.Context, t testing.TB, r hxReq) hxResp {
	t.Helper()
	resp, err := e.try(ctx, r)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	return resp
}

// try is do without a testing.TB, for worker goroutines.
func (e *hxEnv) try(ctx context.Context, r hxReq) (hxResp, error) {
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	tool := r.tool
	if tool == "" {
		tool = server.ToolNotesWrite
	}
	body, ct := r.body, r.contentType
	if body == nil {
		args := map[string]any{}
		if tool == server.ToolNotesWrite {
			args["text"] = r.text
		}
		body, ct = hxToolBody(tool, args), "application/json"
	}
	u := e.mcpURL
	if r.query != "" {
		u += "?" + r.query
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return hxResp{}, err
	}
	id := fmt.Sprint(e.nextID.Add(1))
	req.Header.Set(hxRequestID, id)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", hxRevision)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if r.authz != nil {
		req.Header["Authorization"] = r.authz
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	if r.host != "" {
		req.Host = r.host
	}
	start := time.Now()
	resp, err := e.client.Do(req)
	if err != nil {
		return hxResp{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	lat := time.Since(start)
	if err != nil {
		return hxResp{}, err
	}
	return hxResp{
		status:     resp.StatusCode,
		wwwAuth:    resp.Header.Values("WWW-Authenticate"),
		retryAfter: resp.Header.Values("Retry-After"),
		cache:      resp.Header.Get("Cache-Control"),
		body:       b,
		bodyRead:   e.reads.get(id),
		latency:    lat,
		id:         id,
	}, nil
}

// whoami sends a whoami tools/call with tok as bearer token.
func (e *hxEnv) whoami(ctx context.Context, t testing.TB, tok string) hxResp {
	t.Helper()
	return e.do(ctx, t, hxReq{authz: hxBearer(tok), tool: server.ToolWhoami})
}

// notes returns the texts of tenant-a's notes, listed with a fresh valid
// token holding notes:read.
func (e *hxEnv) notes(ctx context.Context, t testing.TB) []string {
	t.Helper()
	tok := e.iss.Token(t, authtest.Token{Scopes: []string{hxBaseScope, server.ScopeNotesRead}})
	r := e.do(ctx, t, hxReq{authz: hxBearer(tok), tool: server.ToolNotesList})
	if r.status != http.StatusOK {
		t.Fatalf("notes_list: status %d: %s", r.status, r.body)
	}
	var rpc struct {
		Result struct {
			IsError           bool                   `json:"isError"`
			StructuredContent server.NotesListResult `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.body, &rpc); err != nil || rpc.Result.IsError {
		t.Fatalf("notes_list answer %s: %v", r.body, err)
	}
	out := []string{}
	for _, n := range rpc.Result.StructuredContent.Notes {
		out = append(out, n.Text)
	}
	return out
}
