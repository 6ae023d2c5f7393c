package mcpgo

import (
	"context"
	"maps"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpguard/mcpguard/middleware"
)

// metaSchemes is the _meta member of a list entry's annotation (SEP-1488,
// as the OpenAI Apps SDK reads it).
const metaSchemes = "securitySchemes"

// install makes s show its tools/list, prompts/list, resources/list and
// resources/templates/list answers as middleware.Config.Lists says, entry
// by entry ([middleware.Middleware.ListEntry], docs/policy.md "Lists"):
// by default every entry a client could obtain, each with
// _meta.securitySchemes naming the scopes its call needs; with ListHide
// only what the request's principal may call; with ListOff as mcp-go
// answers. In every mode an entry no token could reach is left out. It
// adds after-list hooks to s's hooks (server.WithHooks; new ones if s has
// none). Lists only show; every call is still checked by the middleware.
func (a *Adapter) install(s *server.MCPServer) {
	h := s.GetHooks()
	if h == nil {
		h = &server.Hooks{}
		server.WithHooks(h)(s)
	}
	m := a.m
	h.AddAfterListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, r *mcp.ListToolsResult) {
		if r != nil {
			r.Tools = rewrite(ctx, m, "tools/list", r.Tools, func(t *mcp.Tool) (string, **mcp.Meta) { return t.Name, &t.Meta })
		}
	})
	h.AddAfterListPrompts(func(ctx context.Context, _ any, _ *mcp.ListPromptsRequest, r *mcp.ListPromptsResult) {
		if r != nil {
			r.Prompts = rewrite(ctx, m, "prompts/list", r.Prompts, func(p *mcp.Prompt) (string, **mcp.Meta) { return p.Name, &p.Meta })
		}
	})
	h.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, r *mcp.ListResourcesResult) {
		if r != nil {
			r.Resources = rewrite(ctx, m, "resources/list", r.Resources, func(rs *mcp.Resource) (string, **mcp.Meta) { return rs.URI, &rs.Meta })
		}
	})
	h.AddAfterListResourceTemplates(func(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, r *mcp.ListResourceTemplatesResult) {
		if r != nil {
			r.ResourceTemplates = rewrite(ctx, m, "resources/templates/list", r.ResourceTemplates, func(rt *mcp.ResourceTemplate) (string, **mcp.Meta) {
				if rt.URITemplate == nil || rt.URITemplate.Template == nil {
					return "", &rt.Meta // no template: matches no resource; listed as the policy says of ""
				}
				return rt.URITemplate.Raw(), &rt.Meta
			})
		}
	})
}

// rewrite returns the entries of s that m lists for the principal of ctx
// (none: no token), in a new slice, each with its annotation in a new
// _meta; entry gives an entry's name and its _meta. mcp-go's own values
// are never modified: the entries are copies, their Meta cloned.
func rewrite[T any](ctx context.Context, m *middleware.Middleware, list string, s []T, entry func(*T) (string, **mcp.Meta)) []T {
	p, _ := middleware.PrincipalFromContext(ctx)
	out := make([]T, 0, len(s))
	for _, v := range s {
		name, _ := entry(&v)
		d := m.ListEntry(p, list, name)
		if !d.Listed {
			continue
		}
		if d.SecuritySchemes != nil {
			_, meta := entry(&v)
			nm := &mcp.Meta{}
			if *meta != nil {
				nm.ProgressToken = (*meta).ProgressToken
				nm.AdditionalFields = maps.Clone((*meta).AdditionalFields)
			}
			if nm.AdditionalFields == nil {
				nm.AdditionalFields = map[string]any{}
			}
			nm.AdditionalFields[metaSchemes] = d.SecuritySchemes
			*meta = nm
		}
		out = append(out, v)
	}
	return out
}
