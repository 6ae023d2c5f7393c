package gosdk

import (
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/middleware"
)

// MCP methods whose results are rewritten, entry by entry.
const (
	methodListTools     = "tools/list"
	methodListPrompts   = "prompts/list"
	methodListResources = "resources/list"
	methodListTemplates = "resources/templates/list"
)

// metaSchemes is the _meta member of a list entry's annotation (SEP-1488,
// as the OpenAI Apps SDK reads it).
const metaSchemes = "securitySchemes"

// rewriteList returns res with each entry shown as the middleware's
// [middleware.Middleware.ListEntry] decides for p, in the mode of
// middleware.Config.Lists: left out, or kept and, unless the mode is off,
// annotated with _meta.securitySchemes. Other results are returned as they
// are. The result is a copy: the go-sdk's own values are never modified.
func (a *Adapter) rewriteList(p *middleware.Principal, method string, res mcp.Result) mcp.Result {
	switch method {
	case methodListTools:
		r, ok := res.(*mcp.ListToolsResult)
		if !ok || r == nil {
			return res
		}
		out := *r
		out.Tools = rewrite(a.m, p, method, r.Tools, func(t *mcp.Tool) (string, *mcp.Meta) { return t.Name, &t.Meta })
		out.CacheScope = "private"
		return &out
	case methodListPrompts:
		r, ok := res.(*mcp.ListPromptsResult)
		if !ok || r == nil {
			return res
		}
		out := *r
		out.Prompts = rewrite(a.m, p, method, r.Prompts, func(pr *mcp.Prompt) (string, *mcp.Meta) { return pr.Name, &pr.Meta })
		out.CacheScope = "private"
		return &out
	case methodListResources:
		r, ok := res.(*mcp.ListResourcesResult)
		if !ok || r == nil {
			return res
		}
		out := *r
		out.Resources = rewrite(a.m, p, method, r.Resources, func(rs *mcp.Resource) (string, *mcp.Meta) { return rs.URI, &rs.Meta })
		out.CacheScope = "private"
		return &out
	case methodListTemplates:
		r, ok := res.(*mcp.ListResourceTemplatesResult)
		if !ok || r == nil {
			return res
		}
		out := *r
		out.ResourceTemplates = rewrite(a.m, p, method, r.ResourceTemplates, func(rt *mcp.ResourceTemplate) (string, *mcp.Meta) { return rt.URITemplate, &rt.Meta })
		out.CacheScope = "private"
		return &out
	}
	return res
}

// rewrite returns the entries of s that m lists for p, each a copy with
// its annotation in _meta; entry gives an entry's name and its _meta. The
// slice is never nil (the go-sdk sends [] rather than null).
func rewrite[T any](m *middleware.Middleware, p *middleware.Principal, list string, s []*T, entry func(*T) (string, *mcp.Meta)) []*T {
	out := make([]*T, 0, len(s))
	for _, v := range s {
		if v == nil {
			continue
		}
		name, _ := entry(v)
		d := m.ListEntry(p, list, name)
		if !d.Listed {
			continue
		}
		c := *v
		if d.SecuritySchemes != nil {
			_, meta := entry(&c)
			mm := maps.Clone(*meta)
			if mm == nil {
				mm = mcp.Meta{}
			}
			mm[metaSchemes] = d.SecuritySchemes
			*meta = mm
		}
		out = append(out, &c)
	}
	return out
}
