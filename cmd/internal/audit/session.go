package audit

import (
	"context"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// streamPeek bounds a GET that may open an event stream.
const streamPeek = time.Second

// unverifiedClaims decodes the payload of a JWT without verifying it, for
// choosing test values only (never for a verdict on its own). It returns
// nil for an opaque token.
func unverifiedClaims(tok string) map[string]any {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || len(tok) > 64<<10 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var m map[string]any
	if strictjson.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// claimString returns the first string claim of names in m.
func claimString(m map[string]any, names ...string) string {
	for _, n := range names {
		if s, ok := m[n].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// checkSession runs SESSION-BINDING: the first token opens a 2025-11-25
// session; the second token, presenting that session ID, must be refused
// on POST, GET and DELETE, and the session must survive.
func (a *Auditor) checkSession(ctx context.Context) {
	owner := &mcpConn{token: a.cfg.Token, rev: rev20251125}
	var ev []string
	if !a.initialize(ctx, owner, &ev) {
		a.skip(SessionBinding, "not applicable: the server does not accept a 2025-11-25 initialize", ev...)
		return
	}
	if owner.session == "" {
		a.skip(SessionBinding, "not applicable: the server issued no Mcp-Session-Id (stateless)", ev...)
		return
	}
	defer a.endSession(ctx, owner)
	if a.cfg.Token2 == "" {
		a.skip(SessionBinding, "needs a second principal's token (-token2)", ev...)
		return
	}
	c1, c2 := unverifiedClaims(a.cfg.Token), unverifiedClaims(a.cfg.Token2)
	if s := claimString(c1, "sub"); s != "" && s == claimString(c2, "sub") && claimString(c1, "iss") == claimString(c2, "iss") {
		a.skip(SessionBinding, "-token and -token2 name the same subject: give a token of another principal")
		return
	}
	intruder := mcpConn{token: a.cfg.Token2, rev: rev20251125, session: owner.session}
	x, r := a.send(ctx, intruder.call("tools/list", nil))
	ev1 := a.evidence(x)
	a.noteRefusal(x)
	switch {
	case x.is2xx() && r != nil && len(r.Result) > 0:
		a.fail(SessionBinding, "another principal's POST was served in the first principal's session", ev1)
	case x.status == 0:
		a.fail(SessionBinding, "POST with the session of another principal: no answer", ev1)
	default:
		a.pass(SessionBinding, "", ev1)
	}

	gctx, cancel := context.WithTimeout(ctx, streamPeek)
	req, err := http.NewRequestWithContext(gctx, http.MethodGet, a.endpoint.String(), nil)
	if err == nil {
		req.Header.Set("Authorization", "Bearer "+a.cfg.Token2)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("MCP-Protocol-Version", rev20251125)
		req.Header.Set("Mcp-Session-Id", owner.session)
		x := a.do(gctx, req)
		a.judge(SessionBinding, !x.is2xx(), "", "another principal opened the first principal's event stream (GET)", a.evidence(x))
	}
	cancel()

	req, err = http.NewRequestWithContext(ctx, http.MethodDelete, a.endpoint.String(), nil)
	if err == nil {
		req.Header.Set("Authorization", "Bearer "+a.cfg.Token2)
		req.Header.Set("MCP-Protocol-Version", rev20251125)
		req.Header.Set("Mcp-Session-Id", owner.session)
		x := a.do(ctx, req)
		a.judge(SessionBinding, !x.is2xx(), "", "another principal ended the first principal's session (DELETE)", a.evidence(x))
	}
	x, r = a.send(ctx, owner.call("tools/list", nil))
	a.judge(SessionBinding, x.is2xx() && r != nil && r.Error == nil, "",
		"the first principal's session no longer works after another principal's requests", a.evidence(x))
}

// endSession deletes a session the audit opened.
func (a *Auditor) endSession(ctx context.Context, c *mcpConn) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, a.endpoint.String(), nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("MCP-Protocol-Version", rev20251125)
	req.Header.Set("Mcp-Session-Id", c.session)
	a.do(ctx, req)
}

// tenantArg returns the tenant-selecting argument of t, or "".
func (a *Auditor) tenantArg(t tool) string {
	for name := range t.InputSchema.Properties {
		if a.cfg.TenantArg != "" {
			if name == a.cfg.TenantArg {
				return name
			}
			continue
		}
		if slices.Contains(tenantArgs, strings.ToLower(name)) {
			return name
		}
	}
	return ""
}

// otherTenant returns the tenant value the tenant check asks for.
func (a *Auditor) otherTenant() string {
	if a.cfg.Tenant2 != "" {
		return a.cfg.Tenant2
	}
	if t := claimString(unverifiedClaims(a.cfg.Token2), tenantClaims...); t != "" {
		return t
	}
	return "mcpguard-audit-other-tenant"
}

// checkTenant runs TENANT-FROM-TOKEN: each read-only tool with a tenant
// argument is called with the first token twice without the argument (the
// answers must agree, else there is nothing to compare) and once with
// another tenant's value, which must be refused or answer exactly the
// same.
func (a *Auditor) checkTenant(ctx context.Context, conn *mcpConn, tools []tool) {
	other := a.otherTenant()
	a.secret(other, "tenant2")
	n := 0
	for _, t := range tools {
		arg := a.tenantArg(t)
		if arg == "" || !t.readOnly() || n >= maxTenantTools {
			continue
		}
		n++
		own := minimalArgs(t, canary())
		delete(own, arg)
		x0, r0 := a.send(ctx, conn.call("tools/call", map[string]any{"name": t.Name, "arguments": own}))
		if !x0.is2xx() || r0 == nil || isToolError(r0) {
			a.skip(TenantFromToken, t.Name+": the call without a tenant argument did not succeed", a.evidence(x0))
			continue
		}
		// A tool whose answer changes between identical calls (times,
		// request IDs) cannot be compared.
		if xr, rr := a.send(ctx, conn.call("tools/call", map[string]any{"name": t.Name, "arguments": own})); !xr.is2xx() || rr == nil || !sameJSON(r0.Result, rr.Result) {
			a.skip(TenantFromToken, t.Name+": two identical calls answered differently: nothing to compare with", a.evidence(xr))
			continue
		}
		foreign := map[string]any{}
		for k, v := range own {
			foreign[k] = v
		}
		foreign[arg] = other
		x1, r1 := a.send(ctx, conn.call("tools/call", map[string]any{"name": t.Name, "arguments": foreign}))
		ev := a.evidence(x1)
		switch {
		case x1.status == 0:
			a.fail(TenantFromToken, t.Name+": no answer", ev)
		case !x1.is2xx() || r1 == nil || isToolError(r1):
			a.pass(TenantFromToken, t.Name+": refused", ev)
		case sameJSON(r0.Result, r1.Result):
			a.pass(TenantFromToken, t.Name+": argument ignored", ev)
		default:
			a.fail(TenantFromToken, t.Name+": the "+arg+" argument changed the answer: it selects data the token's tenant may not see", ev)
		}
	}
	if n == 0 {
		a.skip(TenantFromToken, "no read-only tool takes a tenant argument (set -tenant-arg)")
	}
}

// sameJSON compares two JSON values after canonicalization (RFC 8785).
func sameJSON(x, y jsontext.Value) bool {
	x, y = x.Clone(), y.Clone()
	if x.Canonicalize() != nil || y.Canonicalize() != nil {
		return false
	}
	return string(x) == string(y)
}
