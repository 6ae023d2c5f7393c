package validate

import (
	"errors"
	"fmt"
	"github.com/mcpguard/mcpguard/internal/jwtclaims"
	"slices"
	"time"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Claims is a verified JWT access token (RFC 9068 §2.2). Every value comes
// from a token whose signature, issuer, audience, type and time claims have
// been checked. Each call to [Validator.Validate] returns a Claims of its
// own: callers may modify it without affecting other requests or the cache.
type Claims struct {
	// Issuer is "iss", equal to one of Config.Issuers.
	Issuer string
	// Subject is "sub" (empty only with Config.AllowMissingSubject).
	Subject string
	// ClientID is "client_id" (RFC 9068 §2.2, RFC 8693 §4.3), or "azp" when
	// "client_id" is absent.
	ClientID string
	// ID is "jti" (empty only with Config.AllowMissingJTI).
	ID string
	// Tenant is the value of Config.TenantClaim, or empty.
	Tenant string
	// Audience is "aud" as an array (RFC 7519 §4.1.3).
	Audience []string
	// Scopes is "scope" split on spaces (RFC 9068 §2.2.3, RFC 8693 §4.2),
	// or "scp" when Config.AllowSCP is set and "scope" is absent. Nil when
	// the token carries no scope.
	Scopes []string
	// Expiry is "exp", in UTC.
	Expiry time.Time
	// NotBefore is "nbf" in UTC, or the zero time.
	NotBefore time.Time
	// IssuedAt is "iat" in UTC, or the zero time.
	IssuedAt time.Time
	// KeyID is the "kid" header of the token, or empty.
	KeyID string
	// Confirmation is "cnf" (RFC 7800 §3.1), nil when the token has none.
	// It is set only with Config.AllowConfirmation, by a caller that
	// verifies the proof of possession itself: without it a token with
	// "cnf" fails with [Error] "sender_constrained".
	Confirmation *Confirmation

	payload string // the verified claims set, JSON
}

// Decode unmarshals the verified claims set into dst, for claims this
// package does not interpret, with go-json-experiment/json (Go 1.27's
// encoding/json/v2) and its defaults: member names match struct fields
// case-sensitively (use `json:"name"` tags), and duplicate names at any
// depth and invalid UTF-8 are errors. [Validator.Validate] has already
// refused claims sets with repeated names or top-level names equal under
// case folding, so Decode cannot observe a different value for a claim
// than the one Validate checked. A Claims built by hand, not returned by
// Validate, has no claims set, and Decode returns an error.
func (c *Claims) Decode(dst any) error {
	return strictjson.Unmarshal([]byte(c.payload), dst)
}

// clone returns a copy of c that shares no mutable memory with it.
// Audience and Scopes share one new backing array, allocated with the
// copy when they hold at most eight strings together (one allocation on a
// usual cache hit); each is capped, so an append by the caller to one
// never writes into the other. nil stays nil.
func (c *Claims) clone() *Claims {
	var d *Claims
	var buf []string
	if n := len(c.Audience) + len(c.Scopes); n <= len(claimsBox{}.buf) {
		// The usual token: the copy and its slices in one allocation.
		b := &claimsBox{c: *c}
		d, buf = &b.c, b.buf[:0:n]
	} else {
		d, buf = new(Claims), make([]string, 0, n)
		*d = *c
	}
	if c.Audience != nil {
		buf = append(buf, c.Audience...)
		d.Audience = buf[:len(buf):len(buf)]
	}
	if c.Scopes != nil {
		n := len(buf)
		buf = append(buf, c.Scopes...)
		d.Scopes = buf[n:len(buf):len(buf)]
	}
	if c.Confirmation != nil {
		cnf := *c.Confirmation
		d.Confirmation = &cnf
	}
	return d
}

// claimsBox is a Claims copy with room for its audiences and scopes.
type claimsBox struct {
	c   Claims
	buf [8]string
}

// Wrapped errors for claim checks. They name claims, never values.
var (
	errMissingIss       = fmt.Errorf("%w: iss", errMissingClaim)
	errMissingSub       = fmt.Errorf("%w: sub", errMissingClaim)
	errMissingAud       = fmt.Errorf("%w: aud", errMissingClaim)
	errMissingExp       = fmt.Errorf("%w: exp", errMissingClaim)
	errMissingIat       = fmt.Errorf("%w: iat", errMissingClaim)
	errMissingJTI       = fmt.Errorf("%w: jti", errMissingClaim)
	errMissingClientID  = fmt.Errorf("%w: client_id", errMissingClaim)
	errPayloadJSON      = fmt.Errorf("%w: claims set is not a JSON object", errMalformed)
	errIssType          = fmt.Errorf("%w: iss is not a string", errMalformed)
	errStringClaim      = fmt.Errorf("%w: sub, jti, client_id or azp is not a string", errMalformed)
	errAudType          = fmt.Errorf("%w: aud is not a string or an array of strings", errMalformed)
	errTimeClaim        = fmt.Errorf("%w: exp, nbf or iat is not a NumericDate in range", errMalformed)
	errTenantType       = fmt.Errorf("%w: tenant claim is not a string", errMalformed)
	errIssuerMismatch   = fmt.Errorf("%w: verified iss differs", errIssuer)
	errUnknownIssuer    = fmt.Errorf("%w: iss is not configured", errIssuer)
	errNoAudience       = fmt.Errorf("%w: no configured audience in aud", errAudience)
	errMultipleAudience = fmt.Errorf("%w: aud holds several values", errAudience)
	errClientNotAllowed = fmt.Errorf("%w: client_id/azp not in AllowedClients", errClient)
)

// rawClaims holds the raw JSON values of the members this package reads;
// an empty string means absent.
type rawClaims struct {
	iss, sub, aud, exp, nbf, iat, jti, clientID, azp, scope, scp, cnf, tenant string
}

// collect reads the claims set of tok once, by the strictjson policy, and
// picks out the raw values of the members this package reads, as
// sub-strings of tok.payload (no copy per member). Any repeated name, and
// any two names equal under case folding, are refused here, before the
// signature is checked, so no later decoder ([Claims.Decode] included)
// can see a different value than the one checked.
func (v *Validator) collect(tok *token) (rawClaims, error) {
	var rc rawClaims
	tok.payload = string(tok.pay)
	err := readObject(&v.json, tok.pay, tok.payload, v.claimNames, func(name []byte, value string) error {
		var dst *string
		switch string(name) {
		case "iss":
			dst = &rc.iss
		case "sub":
			dst = &rc.sub
		case "aud":
			dst = &rc.aud
		case "exp":
			dst = &rc.exp
		case "nbf":
			dst = &rc.nbf
		case "iat":
			dst = &rc.iat
		case "jti":
			dst = &rc.jti
		case "client_id":
			dst = &rc.clientID
		case "azp":
			dst = &rc.azp
		case "scope":
			dst = &rc.scope
		case "scp":
			dst = &rc.scp
		case "cnf":
			dst = &rc.cnf
		}
		if dst != nil {
			*dst = value
		}
		if v.cfg.TenantClaim != "" && string(name) == v.cfg.TenantClaim {
			rc.tenant = value
		}
		return nil
	})
	if errors.Is(err, errNotObject) {
		return rc, errPayloadJSON
	}
	return rc, err
}

// issuerOf returns the "iss" string. It runs before the signature check, to
// choose the key source, so its errors never contain the value.
func issuerOf(rc *rawClaims) (string, error) {
	if rc.iss == "" {
		return "", errMissingIss
	}
	iss, ok := strictjson.String(rc.iss)
	if !ok {
		return "", errIssType
	}
	if iss == "" {
		return "", errMissingIss
	}
	return iss, nil
}

// decodeClaims decodes and type-checks the verified claims. Check order:
// types (Error "malformed"), presence (Error "missing_claim"), then checkClaims.
func (v *Validator) decodeClaims(rc *rawClaims, c *Claims) error {
	var ok bool
	if c.Subject, ok = optString(rc.sub); !ok {
		return errStringClaim
	}
	if c.ID, ok = optString(rc.jti); !ok {
		return errStringClaim
	}
	if c.ClientID, ok = optString(rc.clientID); !ok {
		return errStringClaim
	}
	azp, ok := optString(rc.azp)
	if !ok {
		return errStringClaim
	}
	if c.Tenant, ok = optString(rc.tenant); !ok {
		return errTenantType
	}
	if rc.aud != "" {
		if c.Audience, ok = audience(rc.aud); !ok {
			return errAudType
		}
	}
	if err := v.decodeTimes(rc, c); err != nil {
		return err
	}
	var err error
	if c.Scopes, err = v.scopes(rc); err != nil {
		return err
	}
	if c.Confirmation, err = v.confirmation(rc.cnf); err != nil {
		return err
	}
	return v.requireClaims(c, azp)
}

// confirmation applies Config.AllowConfirmation to the raw "cnf" (absent
// when empty): refused as Error "sender_constrained" without it, read by
// ParseConfirmation with it.
func (v *Validator) confirmation(raw string) (*Confirmation, error) {
	switch {
	case raw == "":
		return nil, nil
	case !v.cfg.AllowConfirmation:
		return nil, errConfirmation
	}
	return parseConfirmation(raw)
}

func (v *Validator) decodeTimes(rc *rawClaims, c *Claims) error {
	var ok bool
	if rc.exp == "" {
		return errMissingExp
	}
	if c.Expiry, ok = jwtclaims.NumericDate(rc.exp); !ok {
		return errTimeClaim
	}
	if rc.nbf != "" {
		if c.NotBefore, ok = jwtclaims.NumericDate(rc.nbf); !ok {
			return errTimeClaim
		}
	}
	if rc.iat != "" {
		if c.IssuedAt, ok = jwtclaims.NumericDate(rc.iat); !ok {
			return errTimeClaim
		}
	}
	return nil
}

// requireClaims applies RFC 9068 §2.2 with the configured relaxations.
// azp is used for ClientID only when client_id is absent.
func (v *Validator) requireClaims(c *Claims, azp string) error {
	if len(c.Audience) == 0 || (len(c.Audience) == 1 && c.Audience[0] == "") {
		return errMissingAud
	}
	if c.Subject == "" && !v.cfg.AllowMissingSubject {
		return errMissingSub
	}
	if c.ID == "" && !v.cfg.AllowMissingJTI {
		return errMissingJTI
	}
	if c.IssuedAt.IsZero() && (!v.cfg.AllowMissingIssuedAt || v.cfg.MaxTokenLifetime > 0) {
		return errMissingIat
	}
	if c.ClientID == "" {
		if !v.cfg.AllowMissingClientID {
			return errMissingClientID
		}
		c.ClientID = azp
	}
	return nil
}

// checkClaims checks audience, client and time claims, in that order.
func (v *Validator) checkClaims(c *Claims, now time.Time) error {
	if v.cfg.RejectMultipleAudiences && len(c.Audience) > 1 {
		return errMultipleAudience
	}
	if !v.audienceOK(c.Audience) {
		return errNoAudience
	}
	if v.cfg.AllowedClients != nil && (c.ClientID == "" || !slices.Contains(v.cfg.AllowedClients, c.ClientID)) {
		return errClientNotAllowed
	}
	return v.checkTimes(c, now)
}

func (v *Validator) audienceOK(aud []string) bool {
	for _, a := range aud {
		if slices.Contains(v.cfg.Audiences, a) {
			return true
		}
	}
	// MCP (Canonical Server URI): implementations SHOULD accept uppercase
	// scheme and host components. Scheme and host are case-insensitive
	// (RFC 3986 §6.2.2.1); the path stays case-sensitive. Only reached on a
	// mismatch, so the exact match costs nothing extra.
	for _, a := range aud {
		if c, ok := jwtclaims.CanonicalURI(a); ok && slices.Contains(v.canonAud, c) {
			return true
		}
	}
	return false
}

// checkTimes applies RFC 7519 §4.1.4-4.1.6 with the configured leeway, and
// Config.MaxTokenLifetime. It also runs on every cache hit.
func (v *Validator) checkTimes(c *Claims, now time.Time) error {
	lw := v.cfg.Leeway
	if !now.Before(c.Expiry.Add(lw)) {
		return errExpired
	}
	late := now.Add(lw)
	if !c.NotBefore.IsZero() && late.Before(c.NotBefore) {
		return errNotYetValid
	}
	if !c.IssuedAt.IsZero() && late.Before(c.IssuedAt) {
		return errIssuedAt
	}
	if v.cfg.MaxTokenLifetime > 0 && c.Expiry.Sub(c.IssuedAt) > v.cfg.MaxTokenLifetime {
		return errLifetime
	}
	return nil
}

// optString decodes an optional string claim; absent gives "".
func optString(raw string) (string, bool) {
	if raw == "" {
		return "", true
	}
	return strictjson.String(raw)
}

// audience decodes "aud": a string or an array of strings.
func audience(raw string) ([]string, bool) {
	if raw[0] == '"' {
		s, ok := strictjson.String(raw)
		if !ok {
			return nil, false
		}
		return []string{s}, true
	}
	return strictjson.Strings(raw)
}
