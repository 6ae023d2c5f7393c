package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// rawRequest is one hand-built MCP POST.
type rawRequest struct {
	token    string // bearer token; empty sends none
	revision string // "2026-07-28" builds a self-contained request with _meta and the standard headers
	method   string // JSON-RPC method
	params   map[string]any
	// header overrides (or, with an empty value, deletes) request headers
	// after the standard ones are set.
	header map[string]string
	id     int
	// client sends the request; nil means http.DefaultClient.
	client *http.Client
}

// rawResponse is the answer to a rawRequest.
type rawResponse struct {
	status  int
	wwwAuth []string
	body    []byte
	rpc     struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
}

// rawPost sends r to the MCP endpoint with net/http alone, as a client
// library would, and decodes a JSON-RPC answer if there is one. A
// transport error fails the test.
func rawPost(ctx context.Context, t *testing.T, mcpURL string, r rawRequest) *rawResponse {
	t.Helper()
	out, err := rawDo(ctx, mcpURL, r)
	if err != nil {
		t.Fatalf("POST %s: %v", mcpURL, err)
	}
	return out
}

// rawDo is rawPost returning the transport error.
func rawDo(ctx context.Context, mcpURL string, r rawRequest) (*rawResponse, error) {
	params := map[string]any{}
	for k, v := range r.params {
		params[k] = v
	}
	if r.revision == rev20260728 {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    rev20260728,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
	}
	id := r.id
	if id == 0 {
		id = 1
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": r.method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.revision != "" {
		req.Header.Set("MCP-Protocol-Version", r.revision)
	}
	if r.revision == rev20260728 {
		req.Header.Set("Mcp-Method", r.method)
		if name, ok := r.params["name"].(string); ok {
			req.Header.Set("Mcp-Name", name)
		}
	}
	for k, v := range r.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	c := r.client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := &rawResponse{status: resp.StatusCode, wwwAuth: resp.Header.Values("WWW-Authenticate")}
	out.body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	msg := out.body
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The go-sdk answers with SSE unless JSONResponse is set: use the
		// last data line, which carries the response.
		for _, line := range strings.Split(string(out.body), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				msg = []byte(d)
			}
		}
	}
	_ = json.Unmarshal(msg, &out.rpc)
	return out, nil
}

// toolCall returns the params of a tools/call.
func toolCall(name string, args map[string]any) map[string]any {
	if args == nil {
		args = map[string]any{}
	}
	return map[string]any{"name": name, "arguments": args}
}

// toolResult decodes the result of a tools/call answer.
type toolResult struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

func (r *rawResponse) tool(t *testing.T) toolResult {
	t.Helper()
	if r.status != http.StatusOK || r.rpc.Error != nil || r.rpc.Result == nil {
		t.Fatalf("tools/call answer: %d %s", r.status, r.body)
	}
	var tr toolResult
	if err := json.Unmarshal(r.rpc.Result, &tr); err != nil {
		t.Fatalf("tools/call result %s: %v", r.rpc.Result, err)
	}
	return tr
}
