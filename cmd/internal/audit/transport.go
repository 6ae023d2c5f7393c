package audit

import (
	"context"
	"fmt"
	"net/http"
)

// foreignOrigin is the Origin of the DNS-rebinding check.
const foreignOrigin = "https://" + spoofHost

// checkTransport runs TR-QUERY-TOKEN, TR-DUPLICATE-AUTHORIZATION and
// TR-ORIGIN. With conn (a working token and the revision it works in)
// they send what would otherwise succeed; without, they use the garbage
// token, and a server that authenticates before checking Origin cannot be
// judged.
func (a *Auditor) checkTransport(ctx context.Context, conn *mcpConn) {
	withCreds := conn != nil
	tok := "mcpguard-audit-garbage-token"
	base := a.probe()
	if withCreds {
		tok = conn.token
		base = conn.call("tools/list", nil)
		base.token = ""
	}

	c := base
	c.edit = func(r *http.Request) {
		q := r.URL.Query()
		q.Set("access_token", tok)
		r.URL.RawQuery = q.Encode()
	}
	x, _ := a.send(ctx, c)
	a.noteRefusal(x)
	ev := a.evidence(x)
	switch {
	case x.status == 0:
		a.fail(TRQueryToken, "no answer", ev)
	case x.is2xx():
		a.fail(TRQueryToken, "a token in the URL query was accepted", ev)
	case x.status == http.StatusBadRequest || x.status == http.StatusUnauthorized:
		a.pass(TRQueryToken, credNote(withCreds), ev)
	default:
		a.fail(TRQueryToken, fmt.Sprintf("got %d, want 400 or 401", x.status), ev)
	}

	c = base
	c.edit = func(r *http.Request) {
		r.Header["Authorization"] = []string{"Bearer " + tok, "Bearer " + tok}
	}
	x, _ = a.send(ctx, c)
	a.noteRefusal(x)
	ev = a.evidence(x)
	switch {
	case x.status == 0:
		a.fail(TRDuplicateAuth, "no answer", ev)
	case x.is2xx():
		a.fail(TRDuplicateAuth, "a request with two Authorization headers was served", ev)
	case x.status == http.StatusBadRequest || (!withCreds && x.status == http.StatusUnauthorized):
		a.pass(TRDuplicateAuth, credNote(withCreds), ev)
	default:
		a.fail(TRDuplicateAuth, fmt.Sprintf("got %d, want 400 invalid_request", x.status), ev)
	}

	c = base
	if withCreds {
		c.token = tok
	}
	c.edit = func(r *http.Request) { r.Header.Set("Origin", foreignOrigin) }
	x, _ = a.send(ctx, c)
	a.noteRefusal(x)
	ev = a.evidence(x)
	switch {
	case x.status == http.StatusForbidden:
		a.pass(TROrigin, "", ev)
	case x.status == http.StatusUnauthorized && !withCreds:
		a.skip(TROrigin, "the server authenticates before it checks Origin: run with a token to judge", ev)
	case x.is2xx():
		a.fail(TROrigin, "a request with a foreign Origin was served", ev)
	case x.status == 0:
		a.fail(TROrigin, "no answer", ev)
	default:
		a.fail(TROrigin, fmt.Sprintf("got %d, want 403", x.status), ev)
	}
}

// credNote says how strong a refusal without credentials is.
func credNote(withCreds bool) string {
	if withCreds {
		return ""
	}
	return "without credentials: only shows that an invalid token is not accepted this way"
}

// wantRPCError judges an answer that must be status with a JSON-RPC
// error of code.
func (a *Auditor) wantRPCError(id string, x *exchange, r *rpcResponse, status, code int, what string) {
	ev := a.evidence(x)
	a.noteRefusal(x)
	switch {
	case x.status == 0:
		a.fail(id, what+": no answer", ev)
	case x.status != status:
		a.fail(id, fmt.Sprintf("%s: got %d, want %d", what, x.status, status), ev)
	case r == nil || r.Error == nil:
		a.fail(id, fmt.Sprintf("%s: no JSON-RPC error, want code %d", what, code), ev)
	case r.Error.Code != code:
		a.fail(id, fmt.Sprintf("%s: JSON-RPC error %d, want %d", what, r.Error.Code, code), ev)
	default:
		a.pass(id, "", ev)
	}
}

// checkTransport2026 runs the 2026-07-28 transport checks with a valid
// token. The server must serve 2026-07-28.
func (a *Auditor) checkTransport2026(ctx context.Context) {
	tok := a.cfg.Token

	c := call{token: tok, rev: rev20260728, method: "tools/list"}
	c.edit = func(r *http.Request) { r.Header.Set("Mcp-Method", "prompts/list") }
	x, r := a.send(ctx, c)
	a.wantRPCError(TRHeaderMismatch, x, r, http.StatusBadRequest, codeHeaderMismatch, "Mcp-Method differs from method")

	c = call{token: tok, rev: rev20260728, method: "tools/call",
		params: map[string]any{"name": "mcpguard-audit-no-such-tool", "arguments": map[string]any{}}}
	c.edit = func(r *http.Request) { r.Header.Set("Mcp-Name", "mcpguard-audit-other-name") }
	x, r = a.send(ctx, c)
	a.wantRPCError(TRHeaderMismatch, x, r, http.StatusBadRequest, codeHeaderMismatch, "Mcp-Name differs from params.name")

	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, err := http.NewRequestWithContext(ctx, m, a.endpoint.String(), nil)
		if err != nil {
			continue
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("MCP-Protocol-Version", rev20260728)
		req.Header.Set("Accept", "text/event-stream")
		x := a.do(ctx, req)
		a.noteRefusal(x)
		a.judge(TRMethods, x.status == http.StatusMethodNotAllowed, "",
			fmt.Sprintf("%s got %d, want 405", m, x.status), a.evidence(x))
	}

	const future = "2099-01-01"
	c = call{token: tok, rev: rev20260728, method: "tools/list",
		params: map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": future}}}
	c.edit = func(r *http.Request) { r.Header.Set("MCP-Protocol-Version", future) }
	x, r = a.send(ctx, c)
	a.wantRPCError(TRVersion, x, r, http.StatusBadRequest, codeUnsupportedVersion, "version "+future)

	c = call{token: tok, rev: rev20260728, method: "tools/list", noMeta: true}
	x, r = a.send(ctx, c)
	a.wantRPCError(TRMetaMissing, x, r, http.StatusBadRequest, codeInvalidParams, "no _meta protocolVersion")
}
