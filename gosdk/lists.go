package gosdk

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/middleware"
)

// MCP methods whose results are filtered, and the operation each entry is
// checked against.
const (
	methodListTools     = "tools/list"
	methodListPrompts   = "prompts/list"
	methodListResources = "resources/list"
)

// filterList returns res with the entries p may not call removed, for the
// three list methods; other results are returned as they are. The result
// is a copy: the go-sdk's own values are never modified.
func (a *Adapter) filterList(p *middleware.Principal, method string, res mcp.Result) mcp.Result {
	switch method {
	case methodListTools:
		r, ok := res.(*mcp.ListToolsResult)
		if !ok || r == nil {
			return res
		}
		out := *r
		out.Tools = keep(r.Tools, func(t *mcp.Tool) bool { return a.m.Permits(p, "tools/call", t.Name) })
		out.CacheScope = "private"
		return &out
	case methodListPrompts:
		r, ok := res.(*mcp.ListPromptsResult)
		if !ok || r == nil {
			return res
		}
		out := *r
		out.Prompts = keep(r.Prompts, func(pr *mcp.Prompt) bool { return a.m.Permits(p, "prompts/get", pr.Name) })
		out.CacheScope = "private"
		return &out
	case methodListResources:
		r, ok := res.(*mcp.ListResourcesResult)
		if !ok || r == nil {
			return res
		}
		out := *r
		out.Resources = keep(r.Resources, func(rs *mcp.Resource) bool { return a.m.Permits(p, "resources/read", rs.URI) })
		out.CacheScope = "private"
		return &out
	}
	return res
}

// keep returns the elements of s for which ok is true, in a new slice that
// is never nil (the go-sdk sends [] rather than null).
func keep[T any](s []T, ok func(T) bool) []T {
	out := make([]T, 0, len(s))
	for _, v := range s {
		if ok(v) {
			out = append(out, v)
		}
	}
	return out
}
