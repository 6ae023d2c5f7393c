package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// MCP revisions the audit speaks.
const (
	rev20260728 = "2026-07-28"
	rev20251125 = "2025-11-25"
)

// JSON-RPC error codes the checks expect.
const (
	codeInvalidParams      = -32602
	codeHeaderMismatch     = -32020
	codeUnsupportedVersion = -32022
)

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    jsontext.Value `json:"data,omitempty"`
}

// rpcResponse is a JSON-RPC response.
type rpcResponse struct {
	ID     jsontext.Value `json:"id,omitempty"`
	Result jsontext.Value `json:"result,omitempty"`
	Error  *rpcError      `json:"error,omitempty"`
}

// call is one MCP request to send.
type call struct {
	token   string // "" sends no Authorization
	rev     string // rev20260728 or rev20251125
	method  string
	params  map[string]any
	session string // Mcp-Session-Id (2025-11-25)
	notify  bool   // a notification: no id
	// edit, if set, changes the request (header mismatches and the like)
	// after it is built; body edits go through params.
	edit func(*http.Request)
	// noMeta leaves the 2026-07-28 _meta out of params.
	noMeta bool
	// target, if not nil, is where the call goes instead of the endpoint
	// (the upstream behind a proxy).
	target *url.URL
}

// clientInfo is the implementation the audit announces.
var clientInfo = map[string]any{"name": "mcpguard-audit", "version": "0"}

// newCall builds the HTTP request of c.
func (a *Auditor) newCall(ctx context.Context, c call) (*http.Request, error) {
	params := map[string]any{}
	for k, v := range c.params {
		params[k] = v
	}
	if c.rev == rev20260728 && !c.noMeta {
		meta := map[string]any{
			"io.modelcontextprotocol/protocolVersion":    rev20260728,
			"io.modelcontextprotocol/clientInfo":         clientInfo,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		if m, ok := params["_meta"].(map[string]any); ok {
			for k, v := range m {
				meta[k] = v
			}
		}
		params["_meta"] = meta
	}
	msg := map[string]any{"jsonrpc": "2.0", "method": c.method, "params": params}
	if !c.notify {
		a.nextID++
		msg["id"] = a.nextID
	}
	body, err := json.Marshal(msg, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	target := a.endpoint
	if c.target != nil {
		target = c.target
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	switch c.rev {
	case rev20260728:
		h.Set("MCP-Protocol-Version", rev20260728)
		h.Set("Mcp-Method", c.method)
		switch c.method {
		case "tools/call", "prompts/get":
			if n, ok := c.params["name"].(string); ok {
				h.Set("Mcp-Name", headerValue(n))
			}
		case "resources/read":
			if u, ok := c.params["uri"].(string); ok {
				h.Set("Mcp-Name", headerValue(u))
			}
		}
	case rev20251125:
		if c.method != "initialize" {
			h.Set("MCP-Protocol-Version", rev20251125)
		}
		if c.session != "" {
			h.Set("Mcp-Session-Id", c.session)
		}
	}
	if c.edit != nil {
		c.edit(req)
	}
	return req, nil
}

// send sends c and decodes the JSON-RPC answer, if any.
func (a *Auditor) send(ctx context.Context, c call) (*exchange, *rpcResponse) {
	req, err := a.newCall(ctx, c)
	if err != nil {
		return &exchange{method: http.MethodPost, url: a.endpoint, reqHeader: http.Header{}, err: err}, nil
	}
	x := a.do(ctx, req)
	if !x.ok() && x.status == 0 {
		return x, nil
	}
	return x, readRPC(x.header.Get("Content-Type"), x.body)
}

// readRPC decodes a JSON-RPC response from a JSON body or from the first
// response (a message with result or error) of a text/event-stream body.
// It returns nil when there is none. The body is untrusted: decoding is
// strict (duplicate names and invalid UTF-8 are refused) and bounded by
// the caller's read limit.
func readRPC(contentType string, body []byte) *rpcResponse {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "text/event-stream" {
		for _, data := range sseData(body) {
			if r := decodeRPC(data); r != nil && (r.Error != nil || len(r.Result) > 0) {
				return r
			}
		}
		return nil
	}
	return decodeRPC(body)
}

// decodeRPC decodes one JSON-RPC response object, or returns nil.
func decodeRPC(b []byte) *rpcResponse {
	var r rpcResponse
	if err := strictjson.Unmarshal(b, &r); err != nil {
		return nil
	}
	return &r
}

// sseData returns the data of each event of an event stream (WHATWG HTML
// §9.2.6): "data:" lines joined by newlines, events ended by a blank line.
// Other fields are ignored. At most 64 events are returned.
func sseData(body []byte) [][]byte {
	var out [][]byte
	var cur []byte
	have := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), len(body)+1)
	for sc.Scan() && len(out) < 64 {
		line := sc.Bytes()
		if len(line) == 0 {
			if have {
				out = append(out, cur)
			}
			cur, have = nil, false
			continue
		}
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		v = bytes.TrimPrefix(v, []byte(" "))
		if have {
			cur = append(cur, '\n')
		}
		cur = append(cur, v...)
		have = true
	}
	if have && len(out) < 64 {
		out = append(out, cur)
	}
	return out
}

// tool is one entry of tools/list.
type tool struct {
	Name        string `json:"name"`
	InputSchema struct {
		Properties map[string]jsontext.Value `json:"properties,omitempty"`
		Required   []string                  `json:"required,omitempty"`
	} `json:"inputSchema"`
	Annotations *struct {
		ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	} `json:"annotations,omitempty"`
}

// readOnly reports the tool's readOnlyHint.
func (t tool) readOnly() bool {
	return t.Annotations != nil && t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint
}

// toolResult is the part of a tools/call result the checks read.
type toolResult struct {
	IsError bool `json:"isError,omitempty"`
}

// isToolError reports a tools/call answer that is a JSON-RPC error or a
// result with isError.
func isToolError(r *rpcResponse) bool {
	if r == nil || r.Error != nil {
		return true
	}
	var tr toolResult
	if err := strictjson.Unmarshal(r.Result, &tr); err != nil {
		return true
	}
	return tr.IsError
}

// headerValue encodes v for an Mcp-Name header (2026-07-28 §Value
// Encoding): as is when it is visible ASCII and spaces with no leading or
// trailing white space and does not look like the sentinel, else
// =?base64?…?=.
func headerValue(v string) string {
	plain := v != "" && v == strings.TrimSpace(v) && !strings.HasPrefix(v, "=?base64?")
	for i := 0; plain && i < len(v); i++ {
		if c := v[i]; (c < 0x21 || c > 0x7e) && c != ' ' && c != '\t' {
			plain = false
		}
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}
