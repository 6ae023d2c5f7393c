package audit

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/internal/keyalg"
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Proxy describes a deployment behind an authorization proxy (such as
// mcpguard proxy): Endpoint is the proxy's public URL and Upstream the MCP
// server behind it. With Upstream set, the PROXY-* checks call the
// upstream directly, as anyone on its network could, and check that it
// refuses every caller but the proxy.
type Proxy struct {
	// Upstream is the MCP endpoint behind the proxy, as the proxy
	// reaches it (http://10.0.0.5:3000/mcp). Empty means the deployment
	// is not behind a proxy and the PROXY-* checks are skipped. The
	// operator names it, so it is fetched like the endpoint: any address.
	Upstream string
	// AssertionKey, if not nil, is the proxy's signing key for the
	// identity assertions (mcpguard proxy's assertion.key_file). The
	// audit then signs, locally, one assertion the upstream must accept
	// and one for another audience it must refuse (PROXY-UPSTREAM-AUDIENCE).
	// ECDSA P-256 signs ES256, P-384 ES384, Ed25519 EdDSA, RSA RS256.
	// Nil means that check is skipped.
	AssertionKey crypto.Signer
	// AssertionIssuer is the iss of the proxy's assertions. Empty means
	// the origin of Endpoint (mcpguard proxy's default).
	AssertionIssuer string
	// AssertionAudience is the aud the upstream expects. Empty means
	// Upstream (mcpguard proxy's default).
	AssertionAudience string
	// AssertionHeader is the request header that carries the assertion.
	// Empty means Authorization, as "Bearer <jwt>"; any other header
	// carries the bare JWT.
	AssertionHeader string
}

// defaultJWKSPath is where mcpguard proxy serves its JWK Set by default.
const defaultJWKSPath = "/.well-known/jwks.json"

// spoofedIdentity are headers that identity-header gateways trust; a
// direct caller sets them to claim an identity.
var spoofedIdentity = map[string]string{
	"X-Mcpguard-Subject":   "mcpguard-audit",
	"X-Mcpguard-Issuer":    "https://" + spoofHost,
	"X-Mcpguard-Client-Id": "mcpguard-audit",
	"X-Mcpguard-Scopes":    "mcp:tools",
	"X-Mcpguard-Principal": "mcpguard-audit",
	"X-Forwarded-User":     "mcpguard-audit",
	"X-Auth-Request-User":  "mcpguard-audit",
	"Remote-User":          "mcpguard-audit",
}

// ParseAssertionKey reads a PEM private key (PKCS #8, SEC 1 or PKCS #1),
// as mcpguard proxy's assertion.key_file holds it.
func ParseAssertionKey(b []byte) (crypto.Signer, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM block")
	}
	s, err := keyalg.ParsePrivateKey(blk)
	if err != nil {
		return nil, err
	}
	if _, err := assertionAlg(s); err != nil {
		return nil, err
	}
	return s, nil
}

// assertionAlg is the JWS algorithm of key, as mcpguard proxy chooses it
// (keyalg.Assertion).
func assertionAlg(key crypto.Signer) (jose.SignatureAlgorithm, error) {
	return keyalg.Assertion(key.Public())
}

// thumbprint is the RFC 7638 SHA-256 thumbprint of key's public part,
// the kid mcpguard proxy gives its keys.
func thumbprint(key crypto.Signer) string {
	t, err := (&jose.JSONWebKey{Key: key.Public()}).Thumbprint(crypto.SHA256)
	if err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(t)
}

// checkProxyConfig checks Config.Proxy and returns the upstream URL (nil
// when not set).
func checkProxyConfig(p Proxy) (*url.URL, error) {
	if p.Upstream == "" {
		if p.AssertionKey != nil || p.AssertionIssuer != "" || p.AssertionAudience != "" || p.AssertionHeader != "" {
			return nil, fmt.Errorf("%w: the assertion settings need an upstream (-upstream)", ErrConfig)
		}
		return nil, nil
	}
	u, err := checkEndpoint(p.Upstream)
	if err != nil {
		why := strings.TrimPrefix(err.Error(), ErrConfig.Error()+": Endpoint ")
		return nil, fmt.Errorf("%w: Proxy.Upstream (-upstream) %s", ErrConfig, why)
	}
	if p.AssertionKey != nil {
		if _, err := assertionAlg(p.AssertionKey); err != nil {
			return nil, fmt.Errorf("%w: assertion key: %w", ErrConfig, err)
		}
	}
	if h := p.AssertionHeader; h != "" && strings.ContainsAny(h, " \t:\r\n\"(),/;<=>?@[\\]{}") {
		return nil, fmt.Errorf("%w: assertion header is not a header name", ErrConfig)
	}
	return u, nil
}

// upstreamVerdict classifies a direct answer of the upstream.
type upstreamVerdict int

const (
	upstreamRefused  upstreamVerdict = iota // 401 or 403
	upstreamAccepted                        // 2xx
	upstreamUnclear                         // anything else, or no answer
)

// callUpstream sends the audit's probe to the upstream with auth applied
// to the request: a 2026-07-28 tools/list, then, if that got a 4xx other
// than 401 and 403 (a server that checks the protocol first), a
// 2025-11-25 initialize. It returns the last exchange and its verdict.
func (a *Auditor) callUpstream(ctx context.Context, auth func(http.Header)) (*exchange, upstreamVerdict) {
	var x *exchange
	for _, c := range []call{
		{rev: rev20260728, method: "tools/list"},
		{rev: rev20251125, method: "initialize", params: map[string]any{
			"protocolVersion": rev20251125, "capabilities": map[string]any{}, "clientInfo": clientInfo,
		}},
	} {
		c.target = a.upstream
		c.edit = func(r *http.Request) { auth(r.Header) }
		x, _ = a.send(ctx, c)
		switch {
		case x.status == http.StatusUnauthorized || x.status == http.StatusForbidden:
			return x, upstreamRefused
		case x.is2xx():
			if c.method == "initialize" {
				if s := x.header.Get("Mcp-Session-Id"); s != "" {
					a.endUpstreamSession(ctx, s, auth)
				}
			}
			return x, upstreamAccepted
		case x.status < 400 || x.status >= 500:
			return x, upstreamUnclear
		}
	}
	return x, upstreamUnclear
}

// endUpstreamSession deletes a session the audit opened on the upstream.
func (a *Auditor) endUpstreamSession(ctx context.Context, session string, auth func(http.Header)) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, a.upstream.String(), nil)
	if err != nil {
		return
	}
	auth(req.Header)
	req.Header.Set("MCP-Protocol-Version", rev20251125)
	req.Header.Set("Mcp-Session-Id", session)
	a.do(ctx, req)
}

// bearer returns an auth function that sends tok as the assertion header
// carries it (or as Authorization: Bearer when header is "").
func bearer(header, tok string) func(http.Header) {
	return func(h http.Header) {
		if header == "" || strings.EqualFold(header, "Authorization") {
			h.Set("Authorization", "Bearer "+tok)
			return
		}
		h.Set(header, tok)
	}
}

// checkProxy runs the PROXY-* checks.
func (a *Auditor) checkProxy(ctx context.Context) {
	ids := []string{ProxyNoIdentity, ProxyClientToken, ProxyForged, ProxyAudience, ProxyMetadata}
	if a.upstream == nil {
		for _, id := range ids {
			a.skip(id, "not behind a proxy: give the upstream's URL with -upstream to check a proxied deployment")
		}
		return
	}
	p := a.cfg.Proxy
	a.checkProxyMetadata()

	// No identity at all, then the identity headers of header-trusting
	// gateways, forged by a direct caller.
	x, v := a.callUpstream(ctx, func(http.Header) {})
	a.judgeUpstream(ProxyNoIdentity, x, v, "a request without the proxy's identity")
	x, v = a.callUpstream(ctx, func(h http.Header) {
		for k, val := range spoofedIdentity {
			h.Set(k, val)
		}
	})
	a.judgeUpstream(ProxyNoIdentity, x, v, "a request with identity headers set by the caller")

	// The client's own token: an upstream that accepts it takes tokens
	// issued for the proxy's public URL (token passthrough).
	if a.cfg.Token == "" {
		a.skip(ProxyClientToken, "needs credentials (-token or -client-id)")
	} else {
		x, v = a.callUpstream(ctx, bearer(p.AssertionHeader, a.cfg.Token))
		a.judgeUpstream(ProxyClientToken, x, v, "the client's own token")
		if p.AssertionHeader != "" && !strings.EqualFold(p.AssertionHeader, "Authorization") {
			x, v = a.callUpstream(ctx, bearer("", a.cfg.Token))
			a.judgeUpstream(ProxyClientToken, x, v, "the client's own token in Authorization")
		}
	}

	f := a.assertionForger(ctx)
	// Forged assertions: the proxy's issuer and the upstream's audience,
	// but no valid signature.
	unknownKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err == nil {
		if tok, err := sign(jose.ES256, unknownKey, f.kid, f.claims(nil)); err == nil {
			a.secret(tok, "forged assertion, unknown key")
			x, v = a.callUpstream(ctx, bearer(p.AssertionHeader, tok))
			a.judgeUpstream(ProxyForged, x, v, "an assertion signed by an unknown key")
		}
	}
	if tok, err := unsigned(f.kid, f.claims(nil)); err == nil {
		a.secret(tok, "forged assertion, alg:none")
		x, v = a.callUpstream(ctx, bearer(p.AssertionHeader, tok))
		a.judgeUpstream(ProxyForged, x, v, "an alg:none assertion")
	}

	if p.AssertionKey == nil {
		a.skip(ProxyAudience, "needs the proxy's assertion key (-assertion-key) to sign assertions")
		return
	}
	alg, _ := assertionAlg(p.AssertionKey)
	good, err := sign(alg, p.AssertionKey, f.kid, f.claims(nil))
	if err != nil {
		a.skip(ProxyAudience, "could not sign with the assertion key")
		return
	}
	a.secret(good, "assertion")
	gx, gv := a.callUpstream(ctx, bearer(p.AssertionHeader, good))
	if gv != upstreamAccepted {
		a.skip(ProxyAudience, fmt.Sprintf("the upstream did not accept a valid assertion either (got %d): check -assertion-issuer, -assertion-audience and -assertion-header", gx.status), a.evidence(gx))
		return
	}
	other, err := sign(alg, p.AssertionKey, f.kid, f.claims(func(c map[string]any) {
		c["aud"] = "https://" + spoofHost + "/another-upstream"
	}))
	if err != nil {
		return
	}
	a.secret(other, "assertion for another audience")
	x, v = a.callUpstream(ctx, bearer(p.AssertionHeader, other))
	a.judgeUpstream(ProxyAudience, x, v, "an assertion of the proxy for another audience", a.evidence(gx))
}

// judgeUpstream records one direct call that the upstream must refuse.
func (a *Auditor) judgeUpstream(id string, x *exchange, v upstreamVerdict, what string, more ...string) {
	ev := append([]string{a.evidence(x)}, more...)
	switch v {
	case upstreamRefused:
		a.pass(id, "", ev...)
	case upstreamAccepted:
		a.fail(id, "the upstream, called directly, served "+what, ev...)
	default:
		if x.status == 0 {
			a.skip(id, "the upstream did not answer "+what+": unreachable from here, which is good, or down", ev...)
			return
		}
		a.fail(id, fmt.Sprintf("the upstream answered %s with %d, want 401 or 403", what, x.status), ev...)
	}
}

// assertionForger builds assertion claims: the proxy's issuer, the
// upstream's audience, and a kid the upstream knows when one can be
// learnt (the key's thumbprint, or the first kid of the proxy's JWK Set
// at its default path).
func (a *Auditor) assertionForger(ctx context.Context) *forger {
	p := a.cfg.Proxy
	f := &forger{now: a.cfg.Now(), issuer: p.AssertionIssuer, audience: p.AssertionAudience}
	if f.issuer == "" {
		f.issuer = a.endpoint.Scheme + "://" + a.endpoint.Host
	}
	if f.audience == "" {
		f.audience = a.upstream.String()
	}
	if a.challenge401 != nil {
		f.scope = strings.Join(a.challenge401.Scope, " ")
	}
	if p.AssertionKey != nil {
		f.kid = thumbprint(p.AssertionKey)
	}
	if f.kid == "" {
		f.kid = a.proxyKID(ctx)
	}
	if f.kid == "" {
		f.kid = "mcpguard-audit-unknown-key"
	}
	return f
}

// proxyKID returns the first kid of the JWK Set at the endpoint's origin
// and mcpguard proxy's default path, or "".
func (a *Auditor) proxyKID(ctx context.Context) string {
	u := *a.endpoint
	u.Path, u.RawPath, u.RawQuery = defaultJWKSPath, "", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return ""
	}
	req.Header.Set("Accept", "application/json")
	x := a.do(ctx, req)
	if x.status != http.StatusOK || x.truncated {
		return ""
	}
	var set jose.JSONWebKeySet
	if err := strictjson.Unmarshal(x.body, &set); err != nil || len(set.Keys) == 0 {
		return ""
	}
	return set.Keys[0].KeyID
}

// checkProxyMetadata fails when the challenge or the metadata the proxy
// serves names the upstream instead of the public URL.
func (a *Auditor) checkProxyMetadata() {
	needles := []string{strings.ToLower(strings.TrimSuffix(a.upstream.Host+a.upstream.EscapedPath(), "/"))}
	if !strings.EqualFold(a.upstream.Hostname(), a.endpoint.Hostname()) || a.upstream.Port() != a.endpoint.Port() {
		needles = append(needles, strings.ToLower(a.upstream.Host))
	}
	var ev []string
	found := false
	for _, x := range []*exchange{a.first401, a.prmX} {
		if x == nil {
			continue
		}
		ev = append(ev, a.evidence(x))
		text := strings.ToLower(strings.Join(x.header.Values("WWW-Authenticate"), " ") + " " + string(x.body))
		for _, n := range needles {
			if strings.Contains(text, n) {
				found = true
			}
		}
	}
	switch {
	case len(ev) == 0:
		a.skip(ProxyMetadata, "no challenge or metadata to inspect")
	case found:
		a.fail(ProxyMetadata, "the challenge or metadata names the upstream "+quote(a.upstream.Host)+", not the public URL", ev...)
	case a.prm != nil && a.prm.Resource != a.endpoint.String():
		a.fail(ProxyMetadata, "the metadata's resource is not the public URL", ev...)
	default:
		a.pass(ProxyMetadata, "", ev...)
	}
}
