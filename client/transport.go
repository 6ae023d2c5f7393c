package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/prm"
)

// maxChallengeScopes bounds the scope tokens of a challenge the transport
// acts on; a challenge with more is returned to the caller as is.
const maxChallengeScopes = 256

// Transport is an http.RoundTripper that attaches the bearer token
// (RFC 6750 §2.1 Authorization header) to requests for the MCP resource
// and performs MCP step-up authorization (RFC 6750 §3.1 insufficient_scope;
// MCP §Step-Up Authorization Flow).
// It is safe for concurrent use. Create it with [New].
type Transport struct {
	cfg    Config
	origin origin
	md     mdCache

	mu         sync.Mutex
	gen        uint64 // incremented by every successful authorization
	ts         oauth2.TokenSource
	requested  []string      // the scopes last requested (or Config.GrantedScopes)
	granted    []string      // the scopes of the current token, as far as known
	grantedRaw string        // the token response "scope" granted was parsed from
	servers    []string      // the authorization servers of the last authorization's metadata, sorted
	accepted   bool          // the resource answered a request with the current token without a 401
	inflight   chan struct{} // non-nil while an authorization runs
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a Transport for cfg. It fails with an [*Error] of reason
// "config" if Resource is missing or unusable, or MaxRetries is negative
// or above 5.
func New(cfg Config) (*Transport, error) {
	o, err := parseResource(cfg.Resource)
	if err != nil {
		return nil, err
	}
	if cfg.MaxRetries < 0 || cfg.MaxRetries > hardMaxRetries {
		return nil, fmt.Errorf("%w: MaxRetries must be between 0 and %d", errInvalidConfig, hardMaxRetries)
	}
	cfg = cfg.withDefaults()
	return &Transport{
		cfg:       cfg,
		origin:    o,
		ts:        cfg.TokenSource,
		requested: cfg.GrantedScopes,
		granted:   cfg.GrantedScopes,
	}, nil
}

// RoundTrip implements http.RoundTripper. It does not modify req.
//
// A request whose URL origin differs from [Config.Resource]'s (or whose
// Host override does) is passed to Base unchanged, without the token. For
// a request to the resource it sets "Authorization: Bearer <token>" from
// the current token source (if there is one) and sends it. A 401 (no error
// code, or invalid_token) or a 403 insufficient_scope with a usable Bearer
// challenge makes it call the [Authorizer] and resend the request with the
// new token; see the package documentation for the rules and limits. Every
// other response, and every response when Authorizer is nil or the body
// cannot be replayed, is returned as is.
//
// The request is resent whatever its method: a resource server answers
// 401 or 403 before processing the request (MCP: tokens are validated
// "before processing the request").
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.sameOrigin(req) {
		return t.cfg.Base.RoundTrip(req)
	}
	body, err := newReplay(req)
	if err != nil {
		return nil, fmt.Errorf("client: read request body: %w", err)
	}
	defer body.close()

	ctx := req.Context()
	maxSends := 2*t.cfg.MaxRetries + 1
	t.mu.Lock()
	startGen := t.gen
	t.mu.Unlock()
	st := &opState{}
	nonceRetried := false
	for sends := 1; ; sends++ {
		t.mu.Lock()
		gen, ts := t.gen, t.ts
		t.mu.Unlock()

		r2 := req.Clone(ctx)
		if ts != nil {
			tok, err := ts.Token()
			if err != nil {
				return nil, fmt.Errorf("%w: %w", errTokenSource, err)
			}
			if tok == nil || tok.AccessToken == "" {
				return nil, fmt.Errorf("%w: empty access token", errTokenSource)
			}
			t.noteScope(gen, tok)
			if err := t.authorize(r2, tok); err != nil {
				return nil, err
			}
		}
		if err := body.apply(r2); err != nil {
			return nil, fmt.Errorf("client: replay request body: %w", err)
		}
		resp, err := t.cfg.Base.RoundTrip(r2)
		if err != nil {
			return nil, err
		}
		if ts != nil && resp.StatusCode != http.StatusUnauthorized {
			t.noteAccepted(gen)
		}
		if t.useNonce(r2, resp) && !nonceRetried && body.replayable {
			nonceRetried = true // RFC 9449 §9: once, with the new nonce
			discard(resp)
			sends--
			continue
		}
		if t.cfg.Authorizer == nil || !body.replayable {
			return resp, nil
		}
		c, reason, ok := decide(resp.StatusCode, resp.Header.Values("WWW-Authenticate"), t.cfg.DPoP != nil)
		if !ok {
			return resp, nil
		}
		discard(resp)
		if c.ResourceMetadata != "" && t.cfg.DenyCrossOriginMetadata && !t.sameOriginURL(c.ResourceMetadata) {
			return nil, challengeError(errCrossOrigin, resp.StatusCode, c, nil)
		}
		if sends >= maxSends {
			return nil, challengeError(errRetriesExhausted, resp.StatusCode, c, nil)
		}
		changed, err := t.lead(ctx, gen)
		if err != nil {
			return nil, err
		}
		if changed {
			continue // another RoundTrip re-authorized meanwhile: resend with its token
		}
		st.fresh = gen != startGen
		st.wasAccepted = ts != nil && t.wasAccepted(gen)
		if err := t.stepUpAndFinish(ctx, st, resp.StatusCode, c, reason); err != nil {
			return nil, err
		}
	}
}

// opState is the per-RoundTrip step-up state.
type opState struct {
	authorizations int
	fresh          bool // the token just rejected was obtained during this RoundTrip
	wasAccepted    bool // the token just rejected had been accepted before
}

// newToken is the result of a successful authorization.
type newToken struct {
	ts                 oauth2.TokenSource
	requested, granted []string
	grantedRaw         string
	servers            []string
}

// noteAccepted records that the token of generation gen was accepted.
func (t *Transport) noteAccepted(gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gen == gen {
		t.accepted = true
	}
}

// wasAccepted reports whether the token of generation gen, the current
// one, had been accepted by the resource.
func (t *Transport) wasAccepted(gen uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gen == gen && t.accepted
}

// decide picks the challenge the transport acts on. It reports ok only for
// a 401 whose first Bearer challenge has no error code or invalid_token,
// and a 403 whose first Bearer challenge has error="insufficient_scope".
// With dpop, the first DPoP challenge is preferred over the Bearer one.
// Malformed headers and responses without such a challenge are not acted
// on.
func decide(status int, values []string, dpop bool) (challenge.Challenge, string, bool) {
	if (status != http.StatusUnauthorized && status != http.StatusForbidden) || len(values) == 0 {
		return challenge.Challenge{}, "", false
	}
	cs, err := challenge.ParseAll(values)
	if err != nil {
		return challenge.Challenge{}, "", false
	}
	i := slices.IndexFunc(cs, func(c challenge.Challenge) bool { return c.Scheme == "Bearer" })
	if j := slices.IndexFunc(cs, func(c challenge.Challenge) bool { return strings.EqualFold(c.Scheme, "DPoP") }); dpop && j >= 0 {
		i = j
	}
	if i < 0 || len(cs[i].Scope) > maxChallengeScopes {
		return challenge.Challenge{}, "", false
	}
	c := cs[i]
	switch {
	case status == http.StatusUnauthorized && (c.Error == "" || c.Error == challenge.InvalidToken):
		return c, reasonUnauthorized, true
	case status == http.StatusForbidden && c.Error == challenge.InsufficientScope:
		return c, reasonInsufficientScope, true
	}
	return challenge.Challenge{}, "", false
}

// lead waits for a running authorization to end. It reports changed if the
// token generation is no longer gen; otherwise the caller now runs the
// authorization and must call finish.
func (t *Transport) lead(ctx context.Context, gen uint64) (changed bool, err error) {
	t.mu.Lock()
	for t.inflight != nil {
		ch := t.inflight
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		t.mu.Lock()
	}
	defer t.mu.Unlock()
	if t.gen != gen {
		return true, nil
	}
	t.inflight = make(chan struct{})
	return false, nil
}

// finish installs n (if not nil) and ends the running authorization.
func (t *Transport) finish(n *newToken) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n != nil {
		t.gen++
		t.ts, t.requested, t.granted, t.grantedRaw = n.ts, n.requested, n.granted, n.grantedRaw
		t.servers, t.accepted = n.servers, false
	}
	close(t.inflight)
	t.inflight = nil
}

// stepUpAndFinish runs stepUp as the leader and always ends the
// authorization, even if the Authorizer panics.
func (t *Transport) stepUpAndFinish(ctx context.Context, st *opState, status int, c challenge.Challenge, reason string) error {
	var n *newToken
	defer func() { t.finish(n) }()
	var err error
	n, err = t.stepUp(ctx, st, status, c, reason)
	return err
}

// stepUp decides whether to re-authorize for challenge c and does so.
func (t *Transport) stepUp(ctx context.Context, st *opState, status int, c challenge.Challenge, reason string) (*newToken, error) {
	t.mu.Lock()
	requested, granted, servers := t.requested, t.granted, t.servers
	t.mu.Unlock()

	// A 401 for a token the resource accepted before may mean that the
	// resource moved to another authorization server (SEP-2352): read its
	// metadata again rather than from the cache.
	reread := reason == reasonUnauthorized && st.wasAccepted
	var md *prm.Metadata
	want := cleanScopes(c.Scope, false)
	if len(want) == 0 { // MCP §Scope Selection Strategy: fall back to scopes_supported
		var err error
		if md, err = t.metadata(ctx, c.ResourceMetadata, reread); err != nil {
			return nil, err
		}
		want = cleanScopes(md.ScopesSupported, false)
	}
	next := union(requested, granted, want)
	fail := func(sentinel *Error) error { return challengeError(sentinel, status, c, next) }
	// A 403 that asks for nothing new cannot be cured by re-authorizing;
	// neither can a 401 for a token this operation just obtained.
	if (reason == reasonInsufficientScope || st.fresh) && subset(want, requested, granted) {
		return nil, fail(errStepUpLoop)
	}
	if st.authorizations >= t.cfg.MaxRetries {
		return nil, fail(errRetriesExhausted)
	}
	if md == nil {
		var err error
		if md, err = t.metadata(ctx, c.ResourceMetadata, reread); err != nil {
			return nil, err
		}
	}
	now := sortedServers(md.AuthorizationServers)
	st.authorizations++
	ts, err := t.cfg.Authorizer.Authorize(ctx, AuthorizeRequest{
		Resource:                    md.Resource,
		ResourceMetadata:            md,
		AuthorizationServersChanged: servers != nil && !slices.Equal(servers, now),
		Scopes:                      slices.Clone(next),
		Challenge:                   c,
		Reason:                      reason,
		DPoP:                        t.cfg.DPoP,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errAuthorize, err)
	}
	if ts == nil {
		return nil, fmt.Errorf("%w: authorizer returned no token source", errAuthorize)
	}
	ts = oauth2.ReuseTokenSource(nil, ts)
	tok, err := ts.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errAuthorize, err)
	}
	if tok == nil || tok.AccessToken == "" {
		return nil, fmt.Errorf("%w: empty access token", errAuthorize)
	}
	n := &newToken{ts: ts, requested: next, granted: next, servers: now}
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		n.granted, n.grantedRaw = splitScope(s), s
	}
	return n, nil
}

// sortedServers returns a sorted, duplicate-free copy of servers.
func sortedServers(servers []string) []string {
	s := slices.Clone(servers)
	slices.Sort(s)
	return slices.Compact(s)
}

// noteScope records the "scope" member of the token response of the
// current token (RFC 6749 §5.1), if present: a refresh may narrow it.
func (t *Transport) noteScope(gen uint64, tok *oauth2.Token) {
	s, ok := tok.Extra("scope").(string)
	if !ok || s == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gen == gen && s != t.grantedRaw {
		t.granted, t.grantedRaw = splitScope(s), s
	}
}

// sameOrigin reports whether req goes to the resource's origin: its URL
// and, if set and different, its Host override.
func (t *Transport) sameOrigin(req *http.Request) bool {
	if req.URL == nil {
		return false
	}
	if o, ok := originOf(req.URL.Scheme, req.URL.Host); !ok || o != t.origin {
		return false
	}
	if req.Host != "" && req.Host != req.URL.Host {
		if o, ok := originOf(req.URL.Scheme, req.Host); !ok || o != t.origin {
			return false
		}
	}
	return true
}

// sameOriginURL reports whether the absolute URL s is on the resource's
// origin.
func (t *Transport) sameOriginURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() {
		return false
	}
	o, ok := originOf(u.Scheme, u.Host)
	return ok && o == t.origin
}
