package audit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/prm"
)

// maxEvidence bounds the evidence lines kept per check.
const maxEvidence = 8

// Result is the outcome of one check.
type Result struct {
	CheckInfo
	// Verdict is pass, fail or skip.
	Verdict Verdict `json:"verdict"`
	// Detail says, in one sentence, why the verdict is what it is.
	Detail string `json:"detail,omitempty"`
	// Evidence holds the exchanges behind the verdict, one line each:
	// request, status line, WWW-Authenticate and a body excerpt, with every
	// token redacted.
	Evidence []string `json:"evidence,omitempty"`
}

// Report is the outcome of a run.
type Report struct {
	// Endpoint is the audited MCP endpoint.
	Endpoint string `json:"endpoint"`
	// Started is when the run began, in UTC.
	Started time.Time `json:"started"`
	// Credentials says whether a token was used ("none", "token",
	// "token+token2").
	Credentials string `json:"credentials"`
	// Requests is the number of requests sent.
	Requests int `json:"requests"`
	// Results has one entry per check of [Catalog], in its order.
	Results []Result `json:"results"`
}

// Failed returns the failing results whose severity is at least min.
func (r *Report) Failed(min Severity) []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Verdict == Fail && res.Severity.AtLeast(min) {
			out = append(out, res)
		}
	}
	return out
}

// Auditor runs the checks against one endpoint. It is not safe for
// concurrent use; every request it sends is sequential.
type Auditor struct {
	cfg      Config
	endpoint *url.URL
	upstream *url.URL      // Config.Proxy.Upstream, or nil
	client   *http.Client  // for the origins the operator named
	dialer   *pinnedDialer // client's dialer: the endpoint's host at its pinned addresses
	lookup   lookupFunc    // the resolver of the endpoint's host
	guarded  *http.Client  // for every URL the audited server hands the audit, set by Run

	// trustedOrigins are the endpoint's origin and those of -issuer and
	// -token-url.
	trustedOrigins []string
	runErr         func() error // the run context's Err: the deadline

	sent      int
	perHost   map[string]int
	lastStart time.Time
	nextID    int
	secrets   map[string]string
	results   map[string]*Result

	// What discovery learnt, for later checks.
	challenge401 *challenge.Challenge        // the Bearer challenge of the tokenless 401
	first401     *exchange                   // the tokenless probe's answer
	prmX         *exchange                   // the answer of the chosen metadata document
	metaURL      string                      // the resource_metadata URL, or a probed one
	prm          *prm.Metadata               // the endpoint's metadata, if found
	issuer       string                      // the first authorization server
	as           *asmeta.Metadata            // its metadata, if found
	asDocs       map[string]*asmeta.Metadata // metadata by issuer, as fetched
	asKey        *signingKey                 // a signing key from its jwks_uri, if any
	refusals     []*exchange                 // error answers seen, for the leak check
	legacyProbe  bool                        // probes use a 2025-11-25 initialize
}

// New checks cfg and returns an Auditor.
func New(cfg Config) (*Auditor, error) {
	cfg = cfg.withDefaults()
	u, err := checkEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	trusted := []string{origin(u)}
	if cc := cfg.ClientCredentials; cc.TokenURL != "" || cc.Issuer != "" {
		if cc.ClientID == "" {
			return nil, fmt.Errorf("%w: a token URL or issuer without a client ID", ErrConfig)
		}
	}
	if raw := cfg.ClientCredentials.TokenURL; raw != "" {
		tu, err := checkCredentialURL(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: token URL: %w", ErrConfig, err)
		}
		trusted = append(trusted, origin(tu))
	}
	if iss := cfg.ClientCredentials.Issuer; iss != "" {
		if _, err := asmeta.WellKnownURLs(iss); err != nil {
			return nil, fmt.Errorf("%w: issuer: not an issuer identifier (https, or http on loopback; no query or fragment)", ErrConfig)
		}
		iu, err := checkCredentialURL(iss)
		if err != nil {
			return nil, fmt.Errorf("%w: issuer: %w", ErrConfig, err)
		}
		trusted = append(trusted, origin(iu))
	}
	up, err := checkProxyConfig(cfg.Proxy)
	if err != nil {
		return nil, err
	}
	if up != nil {
		trusted = append(trusted, origin(up))
	}
	dialer := &pinnedDialer{}
	a := &Auditor{
		cfg:            cfg,
		endpoint:       u,
		upstream:       up,
		dialer:         dialer,
		lookup:         systemLookup,
		client:         newClient(newTransport(cfg.Timeout, cfg.RootCAs, dialer), cfg.Timeout),
		trustedOrigins: trusted,
		perHost:        map[string]int{},
		asDocs:         map[string]*asmeta.Metadata{},
		secrets:        map[string]string{},
		results:        map[string]*Result{},
	}
	a.secret(cfg.Token, "token")
	a.secret(cfg.Token2, "token2")
	a.secret(cfg.ClientCredentials.ClientSecret, "client-secret")
	return a, nil
}

// Run runs every check once and returns the report. It returns an error
// wrapping [ErrUnreachable] when the endpoint never answered, and ctx's
// error when ctx ends first; checks not reached are skipped.
func (a *Auditor) Run(parent context.Context) (*Report, error) {
	rep := &Report{Endpoint: a.endpoint.String(), Started: a.cfg.Now().UTC(), Credentials: "none"}
	ctx, cancel := context.WithTimeout(parent, a.cfg.Deadline)
	defer cancel()
	a.runErr = ctx.Err
	addrs := resolveEndpoint(ctx, a.lookup, a.endpoint.Hostname(), a.cfg.Timeout)
	if _, err := netip.ParseAddr(a.endpoint.Hostname()); err != nil && len(addrs) > 0 {
		a.dialer.host, a.dialer.pins = strings.ToLower(a.endpoint.Hostname()), addrs
	}
	a.guarded = newGuardedClient(a.endpoint, addrs, a.cfg)
	var credErr error
	reachable := a.discover(ctx)
	if reachable {
		a.checkAuthorizationServers(ctx)
		a.checkTokens(ctx)
		if err := a.obtainToken(ctx); errors.Is(err, ErrCredentials) {
			credErr = err
			a.skip(CredAccepted, "client credentials not sent: "+strings.TrimPrefix(err.Error(), ErrCredentials.Error()+": "))
		} else if err != nil {
			a.fail(CredAccepted, "the client credentials grant failed: "+err.Error())
		}
		if a.cfg.Token == "" {
			a.checkTransport(ctx, nil)
		} else {
			rep.Credentials = "token"
			if a.cfg.Token2 != "" {
				rep.Credentials = "token+token2"
			}
			a.checkWithCredentials(ctx)
		}
		a.checkProxy(ctx)
		a.checkLeaks()
	}
	rep.Requests = a.sent
	for _, info := range Catalog() {
		r, ok := a.results[info.ID]
		if !ok {
			why := "not reached"
			switch {
			case ctx.Err() != nil && parent.Err() == nil:
				why = "not reached: the run's deadline passed (-deadline)"
			case !reachable:
				why = "not reached: the endpoint did not answer"
			case info.Credentials && a.cfg.Token == "":
				why = "needs credentials (-token or -client-id)"
			}
			r = &Result{CheckInfo: info, Verdict: Skip, Detail: why}
		}
		rep.Results = append(rep.Results, *r)
	}
	if err := parent.Err(); err != nil {
		return rep, err
	}
	if ctx.Err() != nil {
		return rep, fmt.Errorf("%w after %v: checks not reached are skipped", ErrDeadline, a.cfg.Deadline)
	}
	if !reachable {
		return rep, fmt.Errorf("%w: %s", ErrUnreachable, a.endpoint.Redacted())
	}
	return rep, credErr
}

// record merges one outcome into the result of id: fail wins over pass,
// pass over skip; evidence accumulates up to maxEvidence lines.
func (a *Auditor) record(id string, v Verdict, detail string, ev ...string) {
	if v == Fail {
		for _, ns := range notSentReasons {
			if slices.ContainsFunc(ev, func(e string) bool { return strings.HasSuffix(e, ns.note) }) {
				v, detail = Skip, ns.detail
				break
			}
		}
	}
	ev = slices.DeleteFunc(slices.Clone(ev), func(e string) bool { return e == "" })
	// The audited server controls much of this text: no control or
	// format character reaches a terminal or a published report.
	detail = printable(detail)
	for i := range ev {
		ev[i] = printable(ev[i])
	}
	r, ok := a.results[id]
	switch {
	case !ok:
		r = &Result{CheckInfo: checkInfo(id), Verdict: v, Detail: detail}
		a.results[id] = r
	case rank(v) > rank(r.Verdict):
		// The evidence of the new verdict goes first.
		r.Verdict, r.Detail = v, detail
		r.Evidence = append(ev, r.Evidence...)
		ev = nil
	case v == r.Verdict && v == Fail && detail != "" && !strings.Contains(r.Detail, detail):
		r.Detail += "; " + detail
	}
	r.Evidence = append(r.Evidence, ev...)
	if len(r.Evidence) > maxEvidence {
		r.Evidence = r.Evidence[:maxEvidence]
	}
}

func rank(v Verdict) int {
	switch v {
	case Fail:
		return 2
	case Pass:
		return 1
	}
	return 0
}

func (a *Auditor) pass(id, detail string, ev ...string) { a.record(id, Pass, detail, ev...) }
func (a *Auditor) fail(id, detail string, ev ...string) { a.record(id, Fail, detail, ev...) }
func (a *Auditor) skip(id, detail string, ev ...string) { a.record(id, Skip, detail, ev...) }

// judge records pass when ok, else fail with why.
func (a *Auditor) judge(id string, ok bool, passDetail, why string, ev ...string) {
	if ok {
		a.pass(id, passDetail, ev...)
	} else {
		a.fail(id, why, ev...)
	}
}

// noteRefusal keeps an error answer for the leak check.
func (a *Auditor) noteRefusal(x *exchange) {
	if x.ok() && x.status >= 400 && len(a.refusals) < 64 {
		a.refusals = append(a.refusals, x)
	}
}
