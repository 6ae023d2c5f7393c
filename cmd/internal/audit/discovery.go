package audit

import (
	"context"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/internal/strictjson"
	"github.com/mcpguard/mcpguard/prm"
)

// spoofHost is the made-up host of the Host-header checks.
const spoofHost = "mcpguard-audit.invalid"

// offlineAccess must not be advertised by a resource server.
const offlineAccess = "offline_access"

// probe is the JSON-RPC request of the probes with no or forged tokens: a
// 2026-07-28 tools/list, or a 2025-11-25 initialize for a server that
// answers the former with a protocol error before authenticating.
func (a *Auditor) probe() call {
	if a.legacyProbe {
		return call{rev: rev20251125, method: "initialize", params: map[string]any{
			"protocolVersion": rev20251125, "capabilities": map[string]any{}, "clientInfo": clientInfo,
		}}
	}
	return call{rev: rev20260728, method: "tools/list"}
}

// bearerOf returns the first Bearer challenge of x, and whether the header
// parsed.
func bearerOf(x *exchange) (*challenge.Challenge, bool) {
	cs, err := challenge.ParseAll(x.header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, false
	}
	for i := range cs {
		if cs[i].Scheme == "Bearer" {
			return &cs[i], true
		}
	}
	return nil, true
}

// quotedParam reports whether param appears in header with a
// quoted-string value.
func quotedParam(header, param string) bool {
	re := regexp.MustCompile(`(?i)(?:^|[\s,])` + regexp.QuoteMeta(param) + `\s*=\s*"`)
	return re.MatchString(header)
}

// discover runs the CH-* and PRM-* checks. It returns false when the
// endpoint did not answer at all.
func (a *Auditor) discover(ctx context.Context) bool {
	x, _ := a.send(ctx, a.probe())
	if x.status == 0 {
		a.fail(CH401, "the endpoint did not answer", a.evidence(x))
		return false
	}
	if x.status != http.StatusUnauthorized && x.status >= 400 && x.status < 500 {
		// Perhaps a 2025-11-25-only server that checks the protocol
		// before authenticating: probe the way its clients start.
		a.legacyProbe = true
		if lx, _ := a.send(ctx, a.probe()); lx.status == http.StatusUnauthorized {
			x = lx
		} else {
			a.legacyProbe = false
		}
	}
	a.noteRefusal(x)
	a.first401 = x
	ev := a.evidence(x)
	a.judge(CH401, x.status == http.StatusUnauthorized, "", "a request without a token did not get 401", ev)
	a.checkChallenge401(x, ev)
	a.checkMetadata(ctx)
	a.checkHostSpoofing(ctx)
	return true
}

// checkChallenge401 judges the challenge of the tokenless answer.
func (a *Auditor) checkChallenge401(x *exchange, ev string) {
	vals := x.header.Values("WWW-Authenticate")
	b, parsed := bearerOf(x)
	switch {
	case len(vals) == 0:
		a.fail(CHGrammar, "no WWW-Authenticate header", ev)
	case !parsed:
		a.fail(CHGrammar, "WWW-Authenticate does not parse (RFC 9110 §11.6.1)", ev)
	case b == nil:
		a.fail(CHGrammar, "no Bearer challenge", ev)
	case b.Realm == "" && b.Error == "" && len(b.Scope) == 0 && b.ResourceMetadata == "" && b.ErrorDescription == "" && len(b.Params) == 0:
		a.fail(CHGrammar, "the Bearer challenge has no auth-param (RFC 6750 §3)", ev)
	default:
		joined := strings.Join(vals, ", ")
		var unquoted []string
		for _, p := range []struct {
			name string
			set  bool
		}{{"realm", b.Realm != ""}, {"error", b.Error != ""}, {"error_description", b.ErrorDescription != ""}, {"scope", len(b.Scope) > 0}, {"error_uri", b.Params["error_uri"] != ""}} {
			if p.set && !quotedParam(joined, p.name) {
				unquoted = append(unquoted, p.name)
			}
		}
		a.judge(CHGrammar, len(unquoted) == 0, "", "auth-params not quoted (RFC 6750 §3 ABNF): "+strings.Join(unquoted, ", "), ev)
	}
	if b == nil {
		for _, id := range []string{CHNoError, CHResourceMetadata, CHScope, CHNoOffline} {
			a.skip(id, "no Bearer challenge to inspect", ev)
		}
		return
	}
	a.challenge401 = b
	a.judge(CHNoError, b.Error == "", "", "error=\""+string(b.Error)+"\" sent to a request without credentials", ev)
	rmOK := false
	if u, err := url.Parse(b.ResourceMetadata); err == nil && u.IsAbs() && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		rmOK = true
		a.metaURL = b.ResourceMetadata
	}
	a.judge(CHResourceMetadata, rmOK, "", "no absolute resource_metadata URL in the challenge", ev)
	a.judge(CHScope, len(b.Scope) > 0, "", "no scope in the challenge", ev)
	a.judge(CHNoOffline, !slices.Contains(b.Scope, offlineAccess), "", "offline_access in the challenge scope", ev)
}

// prmFetch is one fetched metadata document.
type prmFetch struct {
	x       *exchange
	doc     *prm.Metadata
	problem string // "" when the document is usable
}

// fetchPRM GETs a metadata URL and applies the RFC 9728 §3.2 response
// rules and the §2 member rules (offline_access and authorization_servers
// are judged by their own checks, not here).
func (a *Auditor) fetchPRM(ctx context.Context, rawURL string) prmFetch {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return prmFetch{x: &exchange{method: "GET", url: &url.URL{Path: rawURL}, reqHeader: http.Header{}}, problem: "bad URL"}
	}
	req.Header.Set("Accept", "application/json")
	x := a.do(ctx, req)
	f := prmFetch{x: x}
	mt, _, _ := mime.ParseMediaType(x.header.Get("Content-Type"))
	switch {
	case x.status == 0:
		f.problem = "no answer"
		return f
	case x.status != http.StatusOK:
		f.problem = "status is not 200"
		a.noteRefusal(x)
		return f
	case mt != "application/json":
		f.problem = "content type is not application/json"
		return f
	case x.truncated || len(x.body) > fetch.MaxResourceMetadataBytes:
		f.problem = "document larger than 64 KiB"
		return f
	}
	var m prm.Metadata
	if err := strictjson.Unmarshal(x.body, &m); err != nil {
		f.problem = "not strict JSON (duplicate member, invalid UTF-8 or wrong types)"
		return f
	}
	f.doc = &m
	// Validate everything except what PRM-NO-OFFLINE-ACCESS and
	// PRM-AUTHORIZATION-SERVERS judge.
	c := m
	c.ScopesSupported = slices.DeleteFunc(slices.Clone(m.ScopesSupported), func(s string) bool { return s == offlineAccess })
	if len(c.AuthorizationServers) == 0 {
		c.AuthorizationServers = []string{"https://placeholder.invalid"}
	}
	if err := c.Validate(); err != nil {
		f.problem = strings.TrimPrefix(err.Error(), "prm: ")
	}
	return f
}

// checkMetadata runs PRM-DISCOVERY … PRM-NO-OFFLINE-ACCESS.
func (a *Auditor) checkMetadata(ctx context.Context) {
	endpoint := a.endpoint.String()
	origin := strings.ToLower(a.endpoint.Scheme + "://" + a.endpoint.Host)
	inserted, err1 := prm.MetadataURL(endpoint)
	root, err2 := prm.MetadataURL(origin) // the root well-known URL
	if err1 != nil || err2 != nil {
		a.fail(PRMDiscovery, "the endpoint URL has no well-known metadata URL")
		return
	}
	fetched := map[string]prmFetch{}
	get := func(u string) prmFetch {
		if f, ok := fetched[u]; ok {
			return f
		}
		f := a.fetchPRM(ctx, u)
		fetched[u] = f
		return f
	}
	usable := func(f prmFetch) bool { return f.problem == "" && f.doc != nil && f.doc.Resource == endpoint }

	var chosen *prmFetch
	if a.metaURL != "" {
		f := get(a.metaURL)
		ev := a.evidence(f.x)
		a.judge(PRMDocument, f.problem == "", "", "resource_metadata document: "+f.problem, ev)
		if f.doc != nil {
			a.judge(PRMResource, f.doc.Resource == endpoint, "", "resource is "+a.quoteFrom(f.x, f.doc.Resource)+", want "+quote(endpoint), ev)
		}
		if usable(f) {
			chosen = &f
		}
	}
	fi := get(inserted)
	evi := a.evidence(fi.x)
	switch {
	case fi.problem != "":
		a.fail(PRMPathInserted, "path-inserted URL "+inserted+": "+fi.problem, evi)
	case fi.doc.Resource != endpoint:
		a.fail(PRMPathInserted, "resource is "+quote(fi.doc.Resource)+", want "+quote(endpoint), evi)
	default:
		a.pass(PRMPathInserted, "", evi)
	}
	if a.metaURL == "" {
		a.judge(PRMDocument, fi.problem == "", "", "path-inserted document: "+fi.problem, evi)
		if fi.doc != nil {
			a.judge(PRMResource, fi.doc.Resource == endpoint, "", "resource is "+quote(fi.doc.Resource)+", want "+quote(endpoint), evi)
		}
	}
	if chosen == nil && usable(fi) {
		chosen = &fi
	}
	if root != inserted {
		fr := get(root)
		evr := a.evidence(fr.x)
		switch {
		case fr.x.status != http.StatusOK:
			a.pass(PRMRoot, "not served", evr)
		case fr.doc == nil:
			a.fail(PRMRoot, "root URL: "+fr.problem, evr)
		case !strings.EqualFold(fr.doc.Resource, origin):
			a.fail(PRMRoot, "root document names "+quote(fr.doc.Resource)+"; a client that probed it expects "+quote(origin), evr)
		default:
			a.pass(PRMRoot, "", evr)
		}
	} else {
		a.skip(PRMRoot, "not applicable: the endpoint is at the root")
	}
	if chosen == nil {
		a.fail(PRMDiscovery, "no usable metadata for the endpoint at resource_metadata or the path-inserted URL")
		for _, id := range []string{PRMAuthServers, PRMNoOffline} {
			a.skip(id, "no metadata document")
		}
		return
	}
	ev := a.evidence(chosen.x)
	a.pass(PRMDiscovery, "", ev)
	a.prm = chosen.doc
	a.prmX = chosen.x
	a.judge(PRMAuthServers, len(chosen.doc.AuthorizationServers) > 0, "", "authorization_servers is empty", ev)
	a.judge(PRMNoOffline, !slices.Contains(chosen.doc.ScopesSupported, offlineAccess), "", "offline_access in scopes_supported", ev)
	if len(chosen.doc.AuthorizationServers) > 0 {
		a.issuer = chosen.doc.AuthorizationServers[0]
	}
}

// checkHostSpoofing sends the tokenless probe and the metadata GET with a
// made-up Host, and with X-Forwarded-Host/Forwarded, and fails when an
// answer names the made-up host.
func (a *Auditor) checkHostSpoofing(ctx context.Context) {
	inserted, err := prm.MetadataURL(a.endpoint.String())
	if err != nil {
		return
	}
	forwarded := func(r *http.Request) {
		r.Header.Set("X-Forwarded-Host", spoofHost)
		r.Header.Set("X-Forwarded-Proto", "https")
		r.Header.Set("Forwarded", "host="+spoofHost+";proto=https")
	}
	// upgraded reports a URL that became https because the request said
	// X-Forwarded-Proto: https, where the real one is http.
	upgraded := func(real, got string) bool {
		rest, ok := strings.CutPrefix(real, "http://")
		return ok && got == "https://"+rest
	}
	leaked := func(x *exchange) bool {
		if strings.Contains(strings.ToLower(strings.Join(x.header.Values("WWW-Authenticate"), " ")), spoofHost) {
			return true
		}
		if b, _ := bearerOf(x); b != nil && a.metaURL != "" && upgraded(a.metaURL, b.ResourceMetadata) {
			return true
		}
		if x.status != http.StatusOK {
			return false
		}
		var m prm.Metadata
		if strictjson.Unmarshal(x.body, &m) == nil && upgraded(a.endpoint.String(), m.Resource) {
			return true
		}
		return strings.Contains(strings.ToLower(string(x.body)), spoofHost)
	}
	for _, variant := range []func(*http.Request){
		func(r *http.Request) { r.Host = spoofHost },
		forwarded,
	} {
		c := a.probe()
		c.edit = variant
		x, _ := a.send(ctx, c)
		a.noteRefusal(x)
		a.judge(PRMHost, !leaked(x), "", "the challenge names the host the request claimed", a.evidence(x))

		req, err := http.NewRequestWithContext(ctx, http.MethodGet, inserted, nil)
		if err != nil {
			continue
		}
		req.Header.Set("Accept", "application/json")
		variant(req)
		mx := a.do(ctx, req)
		a.judge(PRMHost, !leaked(mx), "", "the metadata names the host the request claimed", a.evidence(mx))
	}
}

// quoteFrom quotes a value read from x's body when x is the audited
// endpoint's own answer; another host's values are never quoted.
func (a *Auditor) quoteFrom(x *exchange, s string) string {
	if a.ownAnswer(x) {
		return quote(s)
	}
	return "another value (not quoted: the answer of another host)"
}

// quote renders an untrusted value for a detail line, bounded, with its
// unprintable runes escaped.
func quote(s string) string {
	return `"` + printable(cut(s, 120)) + `"`
}
