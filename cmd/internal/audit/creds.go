package audit

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Bounds of the credentialed checks.
const (
	// maxBoundProbes is how many times the step-up bound check repeats a
	// refused call at most.
	maxBoundProbes = 5
	// maxObservers is how many read-only tools are re-called to look for
	// the canary of a refused call.
	maxObservers = 4
	// maxTenantTools is how many tools the tenant check calls.
	maxTenantTools = 2
)

// tenantArgs are the argument names taken to select a tenant.
var tenantArgs = []string{"tenant", "tenant_id", "tenantid", "tid", "org", "org_id", "organization", "organization_id", "workspace", "workspace_id", "account", "account_id"}

// tenantClaims are the token claims read as the tenant of Token2.
var tenantClaims = []string{"tenant", "tid", "tenant_id", "org_id", "organization"}

// inToolRefusal matches the text of an authorization refusal made inside
// a tool, after dispatch.
var inToolRefusal = regexp.MustCompile(`(?i)insufficient[_ ]scope|missing scope|requires? (the )?scope|not authori[sz]ed|forbidden|permission denied`)

// mcpConn is how the audit talks MCP with one token.
type mcpConn struct {
	token   string
	rev     string
	session string
}

// call builds a call of method on c.
func (c mcpConn) call(method string, params map[string]any) call {
	return call{token: c.token, rev: c.rev, method: method, params: params, session: c.session}
}

// canary returns a unique marker for one tool call.
func canary() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "mcpguard-audit-canary-" + hex.EncodeToString(b)
}

// obtainToken runs the client credentials grant when configured and no
// token was given.
func (a *Auditor) obtainToken(ctx context.Context) error {
	if a.cfg.Token != "" || a.cfg.ClientCredentials.ClientID == "" {
		return nil
	}
	tok, err := a.grant(ctx, a.cfg.ClientCredentials.Scopes)
	if err != nil {
		return err
	}
	a.cfg.Token = tok
	a.secret(tok, "token")
	return nil
}

// checkCredentialURL accepts a URL that may receive the client secret:
// absolute, https, or http on a loopback host ("localhost" or a loopback
// literal), no userinfo or fragment.
func checkCredentialURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.Hostname() == "":
		return nil, errors.New("not an absolute URL")
	case u.User != nil || u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, errors.New("no userinfo or fragment allowed")
	case u.Scheme == "https":
		return u, nil
	case u.Scheme == "http" && isLoopbackURL(u):
		return u, nil
	case u.Scheme == "http":
		return nil, errors.New("plain http to a host that is not loopback would send the client secret in clear: use https")
	}
	return nil, errors.New("scheme must be https")
}

// tokenEndpoint returns where the client secret may go (see
// [ClientCredentials]), or an error wrapping ErrCredentials that says
// why not.
func (a *Auditor) tokenEndpoint(ctx context.Context) (string, error) {
	cc := a.cfg.ClientCredentials
	if cc.TokenURL != "" {
		return cc.TokenURL, nil // checked by New
	}
	if cc.Issuer == "" {
		return "", fmt.Errorf("%w: no -token-url or -issuer: the audit never sends a client secret to a token_endpoint the audited server names", ErrCredentials)
	}
	m := a.asDocs[cc.Issuer]
	if m == nil {
		m, _, _ = a.fetchASMetadata(ctx, cc.Issuer, false)
	}
	if m == nil {
		return "", fmt.Errorf("%w: no metadata naming -issuer %s at its well-known URLs", ErrCredentials, cc.Issuer)
	}
	te, err := url.Parse(m.TokenEndpoint)
	if err != nil || m.TokenEndpoint == "" || te.Host == "" {
		return "", fmt.Errorf("%w: the metadata of -issuer names no usable token_endpoint: set -token-url", ErrCredentials)
	}
	iss, _ := url.Parse(cc.Issuer)
	if origin(te) != origin(iss) {
		return "", fmt.Errorf("%w: the token_endpoint of -issuer's metadata is on %s, not on the metadata's origin %s: set -token-url to send the client secret there", ErrCredentials, printable(origin(te)), printable(origin(iss)))
	}
	if _, err := checkCredentialURL(m.TokenEndpoint); err != nil {
		return "", fmt.Errorf("%w: token_endpoint of -issuer's metadata: %w", ErrCredentials, err)
	}
	return m.TokenEndpoint, nil
}

// grant runs one client credentials grant (RFC 6749 §4.4) for scopes,
// with resource set to the endpoint (RFC 8707), and returns the access
// token. It counts against the request budget, the per-host cap and the
// deadline, and never follows a redirect.
func (a *Auditor) grant(ctx context.Context, scopes []string) (string, error) {
	cc := a.cfg.ClientCredentials
	tokenURL, err := a.tokenEndpoint(ctx)
	if err != nil {
		return "", err
	}
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {a.endpoint.String()}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	// RFC 6749 §2.3.1: form-encode, then Basic.
	basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(cc.ClientID) + ":" + url.QueryEscape(cc.ClientSecret)))
	a.secret(basic, "client-credentials")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", errors.New("the token URL is not usable")
	}
	req.Header.Set("Authorization", "Basic "+basic)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	x := a.do(ctx, req)
	switch {
	case x.err != nil:
		return "", errors.New(a.redact(a.evidence(x)))
	case x.status != http.StatusOK:
		return "", fmt.Errorf("the token endpoint answered %d", x.status)
	case !fetch.IsJSONMediaType(x.header.Get("Content-Type")):
		return "", errors.New("the token response is not JSON")
	}
	var tr struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if err := strictjson.Unmarshal(x.body, &tr); err != nil || tr.AccessToken == "" {
		return "", errors.New("the token response has no access_token")
	}
	if !strings.EqualFold(tr.TokenType, "Bearer") {
		return "", fmt.Errorf("token_type is %s, not Bearer", quote(tr.TokenType))
	}
	return tr.AccessToken, nil
}

// connect finds a revision the server serves with tok and lists its
// tools: 2026-07-28 first, then 2025-11-25 (initialize, session if any).
func (a *Auditor) connect(ctx context.Context, tok string) (*mcpConn, []tool, []string) {
	var ev []string
	c := &mcpConn{token: tok, rev: rev20260728}
	x, r := a.send(ctx, c.call("tools/list", nil))
	ev = append(ev, a.evidence(x))
	if x.is2xx() && r != nil && len(r.Result) > 0 {
		return c, parseTools(r.Result), ev
	}
	a.noteRefusal(x)
	if x.status == http.StatusUnauthorized {
		return nil, nil, ev
	}
	c = &mcpConn{token: tok, rev: rev20251125}
	if !a.initialize(ctx, c, &ev) {
		return nil, nil, ev
	}
	x, r = a.send(ctx, c.call("tools/list", nil))
	ev = append(ev, a.evidence(x))
	if x.is2xx() && r != nil && len(r.Result) > 0 {
		return c, parseTools(r.Result), ev
	}
	a.noteRefusal(x)
	return nil, nil, ev
}

// initialize runs the 2025-11-25 handshake on c and records its session.
func (a *Auditor) initialize(ctx context.Context, c *mcpConn, ev *[]string) bool {
	x, r := a.send(ctx, c.call("initialize", map[string]any{
		"protocolVersion": rev20251125,
		"capabilities":    map[string]any{},
		"clientInfo":      clientInfo,
	}))
	*ev = append(*ev, a.evidence(x))
	if !x.is2xx() || r == nil || len(r.Result) == 0 {
		a.noteRefusal(x)
		return false
	}
	c.session = x.header.Get("Mcp-Session-Id")
	n := c.call("notifications/initialized", nil)
	n.notify = true
	a.send(ctx, n)
	return true
}

// parseTools reads a tools/list result, bounded to 256 tools.
func parseTools(result jsontext.Value) []tool {
	var lr struct {
		Tools []tool `json:"tools"`
	}
	if err := strictjson.Unmarshal(result, &lr); err != nil {
		return nil
	}
	if len(lr.Tools) > 256 {
		lr.Tools = lr.Tools[:256]
	}
	return lr.Tools
}

// propType returns the JSON Schema "type" of a property, or "".
func propType(v jsontext.Value) string {
	var s struct {
		Type any `json:"type"`
	}
	if err := strictjson.Unmarshal(v, &s); err != nil {
		return ""
	}
	switch t := s.Type.(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				return s
			}
		}
	}
	return ""
}

// minimalArgs fills the required arguments of t: strings with mark,
// numbers with 0, booleans with false, arrays and objects empty.
func minimalArgs(t tool, mark string) map[string]any {
	args := map[string]any{}
	for _, name := range t.InputSchema.Required {
		switch propType(t.InputSchema.Properties[name]) {
		case "integer", "number":
			args[name] = 0
		case "boolean":
			args[name] = false
		case "array":
			args[name] = []any{}
		case "object":
			args[name] = map[string]any{}
		default:
			args[name] = mark
		}
	}
	return args
}

// checkWithCredentials runs every check that needs a token.
func (a *Auditor) checkWithCredentials(ctx context.Context) {
	conn, tools, ev := a.connect(ctx, a.cfg.Token)
	a.checkTransport(ctx, conn)
	if conn == nil {
		a.fail(CredAccepted, "tools/list with the given token did not succeed in 2026-07-28 or 2025-11-25", ev...)
		return
	}
	a.pass(CredAccepted, "serves "+conn.rev, ev[len(ev)-1])
	if conn.session != "" {
		defer a.endSession(ctx, conn)
	}
	if conn.rev == rev20260728 {
		a.checkTransport2026(ctx)
	} else {
		for _, id := range []string{TRHeaderMismatch, TRMethods, TRVersion, TRMetaMissing} {
			a.skip(id, "not applicable: the server does not serve 2026-07-28")
		}
	}
	a.checkSession(ctx)
	if !a.cfg.CallTools {
		for _, id := range []string{StepUp, StepUpBeforeRun, StepUpChallenge, StepUpBound, TenantFromToken} {
			a.skip(id, "tool calls disabled (-no-tool-calls)")
		}
		return
	}
	tools = a.toolsToCall(ctx, tools)
	if len(tools) > a.cfg.MaxTools {
		tools = tools[:a.cfg.MaxTools]
	}
	a.checkStepUp(ctx, conn, tools)
	a.checkTenant(ctx, conn, tools)
}

// toolsToCall returns the tools the step-up checks call: those listed for
// the token, plus those listed for Token2 (a server that filters tools/list
// by scope hides exactly the tools the token may not call), limited to
// Config.Tools when set, where a named tool no list shows is called too.
func (a *Auditor) toolsToCall(ctx context.Context, tools []tool) []tool {
	have := func(name string) bool {
		return slices.ContainsFunc(tools, func(t tool) bool { return t.Name == name })
	}
	if a.cfg.Token2 != "" {
		if c2, more, _ := a.connect(ctx, a.cfg.Token2); c2 != nil {
			if c2.session != "" {
				a.endSession(ctx, c2)
			}
			for _, t := range more {
				if !have(t.Name) {
					tools = append(tools, t)
				}
			}
		}
	}
	if len(a.cfg.Tools) > 0 {
		tools = slices.DeleteFunc(tools, func(t tool) bool { return !slices.Contains(a.cfg.Tools, t.Name) })
		for _, name := range a.cfg.Tools {
			if !have(name) {
				tools = append(tools, tool{Name: name})
			}
		}
	}
	return tools
}

// refusedCall is a tool call the server refused with 403.
type refusedCall struct {
	tool   tool
	args   map[string]any
	marker string
	scope  []string // the scopes its challenge asked for
}

// checkStepUp calls each tool once and judges the refusals.
func (a *Auditor) checkStepUp(ctx context.Context, conn *mcpConn, tools []tool) {
	var refused []refusedCall
	var observers []tool
	for _, t := range tools {
		mark := canary()
		args := minimalArgs(t, mark)
		x, r := a.send(ctx, conn.call("tools/call", map[string]any{"name": t.Name, "arguments": args}))
		ev := a.evidence(x)
		switch {
		case x.status == http.StatusForbidden:
			a.noteRefusal(x)
			rc := refusedCall{tool: t, args: args, marker: mark}
			if b, _ := bearerOf(x); b != nil {
				rc.scope = b.Scope
			}
			refused = append(refused, rc)
			a.judgeStepUpAnswer(x, ev)
			if r != nil && len(r.Result) > 0 {
				a.fail(StepUpBeforeRun, t.Name+": the 403 carries a tool result", ev)
			}
		case x.is2xx() && r != nil && isToolError(r) && inToolRefusal.MatchString(string(x.body)):
			// Authorization inside the handler: the client gets no
			// challenge and cannot step up. Whether anything ran first
			// only the canary below can tell.
			a.fail(StepUp, t.Name+": refused inside the tool (HTTP 200 with an error), not with 403 insufficient_scope", ev)
		case x.status == http.StatusUnauthorized:
			a.noteRefusal(x)
			if b, _ := bearerOf(x); b != nil && b.Error == "insufficient_scope" {
				a.fail(StepUp, t.Name+": insufficient scope answered with 401, want 403", ev)
			}
		case x.is2xx() && r != nil && !isToolError(r):
			if t.readOnly() && len(t.InputSchema.Required) == 0 && len(observers) < maxObservers {
				observers = append(observers, t)
			}
		default:
			a.noteRefusal(x)
		}
	}
	if len(refused) == 0 {
		for _, id := range []string{StepUp, StepUpBeforeRun, StepUpChallenge, StepUpBound} {
			a.skip(id, "no tool call was refused with 403 for this token: give a token with fewer scopes, a -token2 with more, or name hidden tools with -tools")
		}
		return
	}
	// Did any refused call leave a trace? Re-read with the tools that
	// worked.
	seen := false
	for _, o := range observers {
		x, _ := a.send(ctx, conn.call("tools/call", map[string]any{"name": o.Name, "arguments": map[string]any{}}))
		for _, rc := range refused {
			if strings.Contains(string(x.body), rc.marker) {
				seen = true
				a.fail(StepUpBeforeRun, rc.tool.Name+" ran although refused: "+o.Name+" shows its argument", a.evidence(x))
			}
		}
	}
	if !seen {
		detail := ""
		if len(observers) == 0 {
			detail = "only the HTTP answers were checked: no read-only tool to observe side effects"
		}
		a.pass(StepUpBeforeRun, detail)
	}
	a.checkStepUpRetry(ctx, conn, refused[0])
	a.checkStepUpBound(ctx, conn, refused[0])
}

// judgeStepUpAnswer judges one 403 to a tool call.
func (a *Auditor) judgeStepUpAnswer(x *exchange, ev string) {
	b, _ := bearerOf(x)
	if b == nil {
		a.fail(StepUpChallenge, "403 without a Bearer challenge", ev)
		a.fail(StepUp, "403 without a challenge: the client cannot step up", ev)
		return
	}
	a.pass(StepUpChallenge, "", ev)
	n := 0
	for _, v := range x.header.Values("WWW-Authenticate") {
		n += strings.Count(strings.ToLower(v), "bearer ")
	}
	var problems []string
	if b.Error != "insufficient_scope" {
		problems = append(problems, "error is "+quote(string(b.Error)))
	}
	if len(b.Scope) == 0 {
		problems = append(problems, "no scope")
	}
	if b.ResourceMetadata == "" {
		problems = append(problems, "no resource_metadata")
	}
	if n > 1 {
		problems = append(problems, "several Bearer challenges (all scopes belong in one)")
	}
	a.judge(StepUp, len(problems) == 0, "", strings.Join(problems, ", "), ev)
}

// checkStepUpBound repeats one refused call until the server stops
// inviting a step-up (a 403 with no challenge or one without scope), at
// most maxBoundProbes times.
func (a *Auditor) checkStepUpBound(ctx context.Context, conn *mcpConn, rc refusedCall) {
	for i := 1; i <= maxBoundProbes; i++ {
		x, _ := a.send(ctx, conn.call("tools/call", map[string]any{"name": rc.tool.Name, "arguments": rc.args}))
		ev := a.evidence(x)
		if x.status != http.StatusForbidden {
			a.fail(StepUpBound, fmt.Sprintf("repeat %d of %s got %d, want 403", i, rc.tool.Name, x.status), ev)
			return
		}
		a.noteRefusal(x)
		b, _ := bearerOf(x)
		if b == nil {
			a.fail(StepUpChallenge, "the terminal 403 carries no WWW-Authenticate (RFC 6750 §3)", ev)
		}
		if b == nil || len(b.Scope) == 0 {
			a.pass(StepUpBound, fmt.Sprintf("terminal answer after %d more refusals of %s", i, rc.tool.Name), ev)
			return
		}
	}
	a.fail(StepUpBound, fmt.Sprintf("%s was still challenged for a step-up after %d more refusals", rc.tool.Name, maxBoundProbes))
}

// checkStepUpRetry, with client credentials, does what a client does
// after a challenge: it gets a token for the configured scopes plus the
// challenged ones and calls again. Another 403 means the one challenge
// did not name every scope the operation needs (MCP 2026-07-28: all in a
// single challenge). The retried call runs the tool, as a real step-up
// would.
func (a *Auditor) checkStepUpRetry(ctx context.Context, conn *mcpConn, rc refusedCall) {
	if a.cfg.ClientCredentials.ClientID == "" || len(rc.scope) == 0 {
		return
	}
	scopes := slices.Clone(a.cfg.ClientCredentials.Scopes)
	for _, s := range rc.scope {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	tok, err := a.grant(ctx, scopes)
	if err != nil {
		a.skip(StepUp, "could not get a token with the challenged scopes: "+err.Error())
		return
	}
	a.secret(tok, "stepped-up token")
	retry := *conn
	retry.token = tok
	x, _ := a.send(ctx, retry.call("tools/call", map[string]any{"name": rc.tool.Name, "arguments": minimalArgs(rc.tool, canary())}))
	ev := a.evidence(x)
	if x.status == http.StatusForbidden {
		a.fail(StepUp, rc.tool.Name+": a token with the challenged scopes was refused again: the challenge did not name every scope", ev)
		return
	}
	a.judge(StepUp, x.is2xx(), rc.tool.Name+": a token with the challenged scopes was accepted",
		fmt.Sprintf("%s: the stepped-up call got %d", rc.tool.Name, x.status), ev)
}
