package devas

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// The JWT bearer grant (RFC 7523 §2.1) and the ID-JAG header type
// (draft-ietf-oauth-identity-assertion-authz-grant §3.1).
const (
	grantTypeJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	typIDJAG           = "oauth-id-jag+jwt"
)

// Bounds of the JWT bearer grant.
const (
	// maxAssertionBytes caps the assertion parameter.
	maxAssertionBytes = 8 << 10
	// maxIDJAGLifetime is the longest an ID-JAG may still be valid when
	// presented: its jti is remembered that long, so the replay cache
	// (maxSpentAssertions entries) is bounded in time too. The extension
	// shows 5 minutes.
	maxIDJAGLifetime = 10 * time.Minute
	// maxWorkloadLifetime is the longest a workload JWT may still be
	// valid when presented (Kubernetes projected tokens last 1 h by
	// default, at most 24 h here).
	maxWorkloadLifetime = 24 * time.Hour
	// maxSpentAssertions bounds the replay cache of ID-JAG jti values. A
	// full cache of unexpired entries refuses new ID-JAGs
	// (temporarily_unavailable) rather than forget one.
	maxSpentAssertions = 16384
	// assertionLeeway is the clock skew tolerated on iat and nbf (not on
	// exp: an expired assertion is refused at once).
	assertionLeeway = 30 * time.Second
)

// assertionAlgorithms are the JWS algorithms accepted on assertions.
var assertionAlgorithms = []jose.SignatureAlgorithm{
	jose.ES256, jose.ES384, jose.ES512, jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512, jose.EdDSA,
}

// TrustedIssuer is an issuer of assertions the JWT bearer grant accepts:
// an enterprise identity provider's ID-JAGs ([Config.TrustedIdPs]) or a
// workload platform's JWTs ([Config.TrustedWorkloads]). DEVELOPMENT ONLY,
// like the rest of devas: its keys are given, never fetched.
type TrustedIssuer struct {
	// Issuer is the exact "iss" of its assertions. Required.
	Issuer string
	// Keys are its public signing keys, chosen by "kid" when the
	// assertion has one. Required, non-empty, public keys only.
	Keys []jose.JSONWebKey
	// Subjects are the "sub" values accepted; an entry ending in "*"
	// accepts every subject starting with what precedes it. For a
	// workload issuer it is required (no entry refuses every workload:
	// the extension's "claim-based authorization" rules); for an
	// identity provider nil accepts every user.
	Subjects []string
	// Tenant is the "tenant" claim of the tokens issued on its
	// assertions. Empty means Config.Tenant.
	Tenant string
}

// subjectAllowed applies t.Subjects to sub; allowAll is the answer for
// an empty list.
func (t *TrustedIssuer) subjectAllowed(sub string, allowAll bool) bool {
	if len(t.Subjects) == 0 {
		return allowAll
	}
	for _, s := range t.Subjects {
		if p, ok := strings.CutSuffix(s, "*"); ok && strings.HasPrefix(sub, p) || s == sub {
			return true
		}
	}
	return false
}

// checkTrusted validates Config.TrustedIdPs or TrustedWorkloads.
func checkTrusted(name string, ts []TrustedIssuer, workload bool) error {
	for i, t := range ts {
		if t.Issuer == "" || len(t.Issuer) > maxURLBytes {
			return fmt.Errorf("%w: %s[%d]: Issuer is required", ErrConfig, name, i)
		}
		if len(t.Keys) == 0 {
			return fmt.Errorf("%w: %s[%d]: Keys is required", ErrConfig, name, i)
		}
		for _, k := range t.Keys {
			if !k.Valid() || !k.IsPublic() {
				return fmt.Errorf("%w: %s[%d]: Keys must be valid public keys", ErrConfig, name, i)
			}
		}
		if workload && len(t.Subjects) == 0 {
			return fmt.Errorf("%w: %s[%d]: Subjects is required (no entry would refuse every workload)", ErrConfig, name, i)
		}
		if t.Tenant != "" && !validName(t.Tenant) {
			return fmt.Errorf("%w: %s[%d]: Tenant must be 1 to 64 characters of [A-Za-z0-9._~+-]", ErrConfig, name, i)
		}
	}
	return nil
}

// assertionClaims are the claims read from an assertion (RFC 7523 §3,
// the ID-JAG draft §3.1), with the module's strict JSON reader.
type assertionClaims struct {
	Issuer    string   `json:"iss"`
	Subject   string   `json:"sub"`
	Audience  any      `json:"aud"` // a string or an array of strings
	Expiry    *float64 `json:"exp"`
	NotBefore *float64 `json:"nbf"`
	IssuedAt  *float64 `json:"iat"`
	ID        string   `json:"jti"`
	ClientID  string   `json:"client_id"`
	Resource  string   `json:"resource"`
	Scope     string   `json:"scope"`
}

// audiences returns the "aud" values, or false if it is not a string or
// an array of strings.
func (c *assertionClaims) audiences() ([]string, bool) {
	switch a := c.Audience.(type) {
	case string:
		return []string{a}, true
	case []any:
		out := make([]string, 0, len(a))
		for _, v := range a {
			s, ok := v.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

// numericDate converts a NumericDate (RFC 7519 §2) within the years 1970
// to 9999.
func numericDate(f *float64) (time.Time, bool) {
	if f == nil || !(*f >= 0 && *f <= 253402300799) {
		return time.Time{}, false
	}
	sec := math.Floor(*f)
	return time.Unix(int64(sec), 0), true
}

// errBadAssertion is the one answer to an assertion that fails a check
// (RFC 7523 §3.1: invalid_grant); the cause is logged only.
func errBadAssertion() *oauthError {
	return &oauthError{"invalid_grant", "the assertion is invalid, expired, replayed, untrusted or not for this server and resource"}
}

// verifiedAssertion is an assertion whose signature and time claims were
// checked, and the issuer that signed it.
type verifiedAssertion struct {
	claims assertionClaims
	issuer *TrustedIssuer
	idjag  bool // from a TrustedIdPs issuer (typ oauth-id-jag+jwt)
	exp    time.Time
}

// verifyAssertion checks the assertion's form, issuer, signature, type,
// audience and times. The reason of a failure is returned for the log.
func (s *Server) verifyAssertion(raw string) (*verifiedAssertion, string) {
	jws, err := jose.ParseSignedCompact(raw, assertionAlgorithms)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, "not a compact JWS with an accepted algorithm"
	}
	unverified := jws.UnsafePayloadWithoutVerification()
	var c assertionClaims
	if err := strictjson.Unmarshal(unverified, &c); err != nil {
		return nil, "claims unreadable"
	}
	// The header type says which kind of assertion it is, and so which
	// list its issuer must be in: one issuer may be in both.
	hdr := jws.Signatures[0].Protected
	typ, _ := hdr.ExtraHeaders[jose.HeaderType].(string)
	v := &verifiedAssertion{idjag: strings.EqualFold(typ, typIDJAG)}
	trusted := s.cfg.TrustedWorkloads
	if v.idjag {
		trusted = s.cfg.TrustedIdPs
	} else if typ != "" && !strings.EqualFold(typ, "JWT") {
		return nil, "assertion of another type"
	}
	for i := range trusted {
		if trusted[i].Issuer == c.Issuer {
			v.issuer = &trusted[i]
			break
		}
	}
	if v.issuer == nil {
		return nil, "untrusted issuer"
	}
	payload, ok := verifyWith(jws, v.issuer.Keys, hdr.KeyID)
	if !ok {
		return nil, "signature"
	}
	// The verified payload is the one read (it is the same bytes).
	if err := strictjson.Unmarshal(payload, &v.claims); err != nil {
		return nil, "claims unreadable"
	}
	c = v.claims
	aud, ok := c.audiences()
	if !ok || !(slices.Contains(aud, s.cfg.Issuer) || (!v.idjag && slices.Contains(aud, s.cfg.Issuer+"/token"))) {
		return nil, "audience is not this server"
	}
	if c.Subject == "" || len(c.Subject) > maxParamBytes {
		return nil, "no sub"
	}
	now := s.cfg.Now()
	exp, ok := numericDate(c.Expiry)
	if !ok {
		return nil, "no exp"
	}
	maxLife := maxWorkloadLifetime
	if v.idjag {
		maxLife = maxIDJAGLifetime
	}
	switch {
	case !now.Before(exp):
		return nil, "expired"
	case exp.Sub(now) > maxLife:
		return nil, "lifetime too long"
	}
	if c.IssuedAt != nil {
		if iat, ok := numericDate(c.IssuedAt); !ok || iat.After(now.Add(assertionLeeway)) {
			return nil, "iat in the future"
		}
	}
	if c.NotBefore != nil {
		if nbf, ok := numericDate(c.NotBefore); !ok || nbf.After(now.Add(assertionLeeway)) {
			return nil, "not yet valid"
		}
	}
	v.exp = exp
	return v, ""
}

// verifyWith checks the signature with the key of kid, or with each key
// when kid is empty, and returns the payload.
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) ([]byte, bool) {
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		if p, err := jws.Verify(keys[i].Key); err == nil {
			return p, true
		}
	}
	return nil, false
}

// jwtBearerGrant is the JWT bearer grant (RFC 7523 §2.1) for an ID-JAG
// from a trusted identity provider (MCP Enterprise-Managed Authorization
// §5) or a workload JWT from a trusted workload issuer (MCP Workload
// Identity Federation). client is the authenticated client, or nil when
// the request carried no client authentication.
func (s *Server) jwtBearerGrant(w http.ResponseWriter, r *http.Request, p params, client *cimd.Client) {
	raw, oerr := p.require("assertion", maxAssertionBytes)
	if oerr != nil {
		s.tokenError(w, r, oerr)
		return
	}
	v, why := s.verifyAssertion(raw)
	if v == nil {
		s.log.InfoContext(r.Context(), "devas: token: assertion refused", "why", why)
		s.tokenError(w, r, errBadAssertion())
		return
	}
	c := v.claims
	if !v.issuer.subjectAllowed(c.Subject, v.idjag) {
		s.log.InfoContext(r.Context(), "devas: token: assertion refused", "why", "subject not allowed", "iss", c.Issuer)
		s.tokenError(w, r, errBadAssertion())
		return
	}
	if len(p["resource"]) > 1 {
		s.tokenError(w, r, &oauthError{"invalid_target", "exactly one resource is supported"})
		return
	}
	resource := ""
	if res := p["resource"]; len(res) == 1 {
		resource = res[0]
	}
	g := grant{Subject: c.Subject, Tenant: v.issuer.Tenant}
	if g.Tenant == "" {
		g.Tenant = s.cfg.Tenant
	}
	var allowed []string // the ID-JAG's scope, a ceiling
	if v.idjag {
		// ID-JAG: the client must authenticate and be the one the IdP
		// named; the token is for the ID-JAG's resource.
		switch {
		case client == nil:
			s.tokenError(w, r, errInvalidClient())
			return
		case c.ClientID == "" || c.ClientID != client.ClientID:
			s.log.InfoContext(r.Context(), "devas: token: assertion refused", "why", "client_id is not the authenticated client", "client_id", client.ClientID)
			s.tokenError(w, r, errBadAssertion())
			return
		case c.ID == "" || len(c.ID) > maxParamBytes:
			s.log.InfoContext(r.Context(), "devas: token: assertion refused", "why", "no jti")
			s.tokenError(w, r, errBadAssertion())
			return
		case c.Resource != "" && !slices.Contains(s.cfg.Resources, c.Resource):
			s.log.InfoContext(r.Context(), "devas: token: assertion refused", "why", "resource is not served here")
			s.tokenError(w, r, errBadAssertion())
			return
		case c.Resource != "" && resource != "" && resource != c.Resource:
			s.tokenError(w, r, &oauthError{"invalid_target", "resource differs from the assertion's"})
			return
		}
		if c.Resource != "" {
			resource = c.Resource
		}
		g.ClientID = client.ClientID
		var ok bool
		if allowed, ok = parseScope(c.Scope); !ok || c.Scope == "" {
			allowed = nil
		}
	} else {
		// Workload: the workload is the client; a client that
		// authenticated as well is named instead.
		g.ClientID = c.Subject
		if client != nil {
			g.ClientID = client.ClientID
		}
	}
	if !slices.Contains(s.cfg.Resources, resource) {
		s.tokenError(w, r, &oauthError{"invalid_target", "unknown or missing resource"})
		return
	}
	g.Resource = resource
	scopes, oerr := s.assertionScopes(p, g, allowed)
	if oerr != nil {
		s.tokenError(w, r, oerr)
		return
	}
	if v.idjag {
		// Spent last, so that a request refused for another reason does
		// not burn the ID-JAG; spent before anything is issued.
		now := s.cfg.Now()
		added, err := s.spentAssertions.add(hashKey(c.Issuer+"\x00"+c.ID), struct{}{}, v.exp, now)
		switch {
		case errors.Is(err, errStoreFull):
			s.log.WarnContext(r.Context(), "devas: token: replay cache full")
			s.tokenError(w, r, &oauthError{"temporarily_unavailable", "too many assertions in use"})
			return
		case !added:
			s.log.WarnContext(r.Context(), "devas: token: ID-JAG replayed", "iss", c.Issuer, "client_id", g.ClientID)
			s.tokenError(w, r, errBadAssertion())
			return
		}
	}
	resp, ok := s.accessToken(w, r, g, scopes)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// assertionScopes returns the scopes of a JWT bearer grant: the requested
// ones (each in Config.Scopes, else invalid_scope), or allowed when none
// is requested; with an ID-JAG scope (allowed not nil) the intersection
// with it (MCP Enterprise-Managed Authorization §7.2.1); then
// Config.GrantScopes. offline_access is never granted: no refresh token
// is issued for an assertion.
func (s *Server) assertionScopes(p params, g grant, allowed []string) ([]string, *oauthError) {
	rawScope, oerr := p.get("scope", maxScopeBytes)
	if oerr != nil {
		return nil, &oauthError{"invalid_scope", "scope too long or repeated"}
	}
	requested, ok := parseScope(rawScope)
	if !ok {
		return nil, &oauthError{"invalid_scope", "malformed scope"}
	}
	for _, sc := range requested {
		if !slices.Contains(s.cfg.Scopes, sc) || sc == offlineAccess {
			return nil, &oauthError{"invalid_scope", "a requested scope is not supported"}
		}
	}
	granted := requested
	if len(requested) == 0 {
		granted = slices.DeleteFunc(slices.Clone(allowed), func(sc string) bool {
			return !slices.Contains(s.cfg.Scopes, sc) || sc == offlineAccess
		})
	} else if allowed != nil {
		granted = slices.DeleteFunc(slices.Clone(requested), func(sc string) bool { return !slices.Contains(allowed, sc) })
	}
	if s.cfg.GrantScopes != nil {
		var out []string
		for _, sc := range s.cfg.GrantScopes(g.ClientID, g.Subject, slices.Clone(granted)) {
			if slices.Contains(granted, sc) && !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
		granted = out
	}
	if len(requested) > 0 && len(granted) == 0 {
		return nil, &oauthError{"invalid_scope", "none of the requested scopes may be granted for this assertion"}
	}
	return granted, nil
}

// jwtBearerEnabled reports whether the JWT bearer grant is served.
func (s *Server) jwtBearerEnabled() bool {
	return len(s.cfg.TrustedIdPs)+len(s.cfg.TrustedWorkloads) > 0
}

// clientPresent reports whether the token request carries client
// identification (client_id or an Authorization header).
func clientPresent(r *http.Request, p params) bool {
	return r.Header.Get("Authorization") != "" || len(p["client_id"]) > 0 || len(p["client_secret"]) > 0
}
