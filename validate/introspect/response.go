package introspect

import (
	"errors"
	"fmt"
	"github.com/mcpguard/mcpguard/internal/jwtclaims"
	"slices"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/internal/strictjson"
	"github.com/mcpguard/mcpguard/validate"
)

// Wrapped errors for response checks. They name members, never values.
var (
	errBody        = fmt.Errorf("%w: introspection response is not a UTF-8 JSON object", validate.Error{Reason: "malformed"})
	errDuplicate   = fmt.Errorf("%w: introspection response repeats a member name", validate.Error{Reason: "malformed"})
	errNoActive    = fmt.Errorf("%w: introspection response has no active member", validate.Error{Reason: "malformed"})
	errActiveType  = fmt.Errorf("%w: introspection response active is not a JSON boolean", validate.Error{Reason: "malformed"})
	errStringType  = fmt.Errorf("%w: introspection response iss, sub, jti, client_id, scope or token_type is not a string", validate.Error{Reason: "malformed"})
	errAudType     = fmt.Errorf("%w: introspection response aud is not a string or an array of strings", validate.Error{Reason: "malformed"})
	errTimeType    = fmt.Errorf("%w: introspection response exp, nbf or iat is not a NumericDate in range", validate.Error{Reason: "malformed"})
	errScopeChar   = fmt.Errorf("%w: introspection response scope has a character outside RFC 6749 §3.3", validate.Error{Reason: "malformed"})
	errTenantType  = fmt.Errorf("%w: introspection response tenant claim is not a string", validate.Error{Reason: "malformed"})
	errInactive    = fmt.Errorf("%w: introspection response active is false", validate.Error{Reason: "inactive"})
	errTokenType   = fmt.Errorf("%w: introspection response token_type is not Bearer", validate.Error{Reason: "type"})
	errConfirmed   = fmt.Errorf("%w: introspection response has cnf and AllowConfirmation is off", validate.Error{Reason: "sender_constrained"})
	errDPoPNoCnf   = fmt.Errorf("%w: introspection response token_type is DPoP without cnf.jkt", validate.Error{Reason: "type"})
	errMissingSub  = fmt.Errorf("%w: sub (introspection response)", validate.Error{Reason: "missing_claim"})
	errIssuer      = fmt.Errorf("%w: introspection response iss differs from the configured issuer", validate.Error{Reason: "issuer"})
	errMissingAud  = fmt.Errorf("%w: aud (introspection response)", validate.Error{Reason: "missing_claim"})
	errMissingExp  = fmt.Errorf("%w: exp (introspection response)", validate.Error{Reason: "missing_claim"})
	errAudience    = fmt.Errorf("%w: no configured audience in introspection response aud", validate.Error{Reason: "audience"})
	errExpired     = fmt.Errorf("%w: introspection response exp", validate.Error{Reason: "expired"})
	errNotYetValid = fmt.Errorf("%w: introspection response nbf", validate.Error{Reason: "not_yet_valid"})
	errIssuedAt    = fmt.Errorf("%w: introspection response iat", validate.Error{Reason: "issued_at"})
)

// members holds the raw JSON values of the response members this package
// reads, as sub-slices of the response body; nil means absent.
type members struct {
	active, iss, aud, exp, nbf, iat, sub, jti, clientID, scope, tokenType, cnf, tenant []byte
}

// readMembers splits body, an introspection response (RFC 7662 §2.2),
// into its top-level members with internal/strictjson, the module's one
// JSON reader: body must be one JSON object in valid UTF-8, without
// trailing data, without repeated member names at any depth, without two
// top-level names equal under case folding and without a case variant of
// a name read here ("Active", "ſub"), so that [validate.Claims.Decode]
// cannot see a different value than the one checked.
func (i *Introspector) readMembers(body []byte) (*members, error) {
	m := &members{}
	err := i.json.Members(body, i.names, func(name, v []byte) error {
		if i.cfg.TenantClaim != "" && string(name) == i.cfg.TenantClaim {
			m.tenant = v
		}
		if dst := m.field(string(name)); dst != nil {
			*dst = v
		}
		return nil
	})
	switch {
	case err == nil:
		return m, nil
	case errors.Is(err, strictjson.ErrDuplicateName), errors.Is(err, strictjson.ErrCaseVariant):
		return nil, errDuplicate
	}
	return nil, errBody
}

// responseNames are the response members readMembers reads, with
// Config.TenantClaim.
func responseNames(tenant string) []string {
	names := []string{"active", "iss", "aud", "exp", "nbf", "iat", "sub", "jti", "client_id", "scope", "token_type", "cnf"}
	if tenant != "" {
		names = append(names, tenant)
	}
	return names
}

func (m *members) field(name string) *[]byte {
	switch name {
	case "active":
		return &m.active
	case "iss":
		return &m.iss
	case "aud":
		return &m.aud
	case "exp":
		return &m.exp
	case "nbf":
		return &m.nbf
	case "iat":
		return &m.iat
	case "sub":
		return &m.sub
	case "jti":
		return &m.jti
	case "client_id":
		return &m.clientID
	case "scope":
		return &m.scope
	case "token_type":
		return &m.tokenType
	case "cnf":
		return &m.cnf
	}
	return nil
}

// parseResponse checks an introspection response and returns the claims
// of an active token. Check order: structure and member types
// (ErrMalformed), active (ErrMalformed, ErrInactive), token type
// (ErrType), presence (ErrMissingClaim), issuer (ErrIssuer), audience
// (ErrAudience), then exp, nbf and iat (ErrExpired, ErrNotYetValid,
// ErrIssuedAt).
func (i *Introspector) parseResponse(body []byte, now time.Time) (*validate.Claims, error) {
	m, err := i.readMembers(body)
	if err != nil {
		return nil, err
	}
	switch {
	case m.active == nil:
		return nil, errNoActive
	case string(m.active) == "false":
		// RFC 7662 §2.2: nothing else of an inactive response matters.
		return nil, errInactive
	case string(m.active) != "true":
		return nil, errActiveType
	}
	var c validate.Claims
	if err := decodeMembers(m, &c); err != nil {
		return nil, err
	}
	if m.cnf != nil {
		if !i.cfg.AllowConfirmation {
			return nil, errConfirmed
		}
		if c.Confirmation, err = validate.ParseConfirmation(string(m.cnf)); err != nil {
			return nil, err
		}
	}
	if err := i.checkMembers(m, &c); err != nil {
		return nil, err
	}
	if err := i.checkTimes(&c, now); err != nil {
		return nil, err
	}
	return validate.NewClaims(c, body), nil
}

// decodeMembers type-checks the members and copies them into c.
func decodeMembers(m *members, c *validate.Claims) error {
	var ok bool
	for _, f := range []struct {
		raw []byte
		dst *string
	}{{m.iss, &c.Issuer}, {m.sub, &c.Subject}, {m.jti, &c.ID}, {m.clientID, &c.ClientID}} {
		if *f.dst, ok = optString(f.raw); !ok {
			return errStringType
		}
	}
	if c.Tenant, ok = optString(m.tenant); !ok {
		return errTenantType
	}
	if m.aud != nil {
		if c.Audience, ok = audience(m.aud); !ok {
			return errAudType
		}
	}
	for _, f := range []struct {
		raw []byte
		dst *time.Time
	}{{m.exp, &c.Expiry}, {m.nbf, &c.NotBefore}, {m.iat, &c.IssuedAt}} {
		if f.raw == nil {
			continue
		}
		if *f.dst, ok = jwtclaims.NumericDate(string(f.raw)); !ok {
			return errTimeType
		}
	}
	scope, ok := optString(m.scope)
	if !ok {
		return errStringType
	}
	if c.Scopes, ok = splitScope(scope); !ok {
		return errScopeChar
	}
	return nil
}

// checkMembers applies the token type, presence, issuer and audience
// rules to a decoded active response.
func (i *Introspector) checkMembers(m *members, c *validate.Claims) error {
	if m.tokenType != nil {
		tt, ok := optString(m.tokenType)
		if !ok {
			return errStringType
		}
		switch {
		case strings.EqualFold(tt, "Bearer"), strings.EqualFold(tt, "access_token"):
		case strings.EqualFold(tt, "DPoP") && i.cfg.AllowConfirmation:
			// RFC 9449 §6.2: a DPoP-bound token; its proof is the
			// caller's to check against Confirmation.
			if c.Confirmation == nil {
				return errDPoPNoCnf
			}
		default:
			return errTokenType
		}
	}
	if m.exp == nil {
		return errMissingExp
	}
	if c.Subject == "" && !i.cfg.AllowMissingSubject {
		return errMissingSub
	}
	noAud := len(c.Audience) == 0 || (len(c.Audience) == 1 && c.Audience[0] == "")
	if noAud && !i.cfg.AllowMissingAudience {
		return errMissingAud
	}
	switch {
	case m.iss == nil:
		c.Issuer = i.cfg.Issuer
	case c.Issuer != i.cfg.Issuer:
		return errIssuer
	}
	if noAud {
		c.Audience = nil
		return nil
	}
	if i.audienceOK(c.Audience) {
		return nil
	}
	return errAudience
}

// audienceOK reports whether aud holds a configured audience: exactly, or
// after lower-casing the scheme and host of both, as validate does for JWTs
// (MCP Canonical Server URI: uppercase scheme and host SHOULD be accepted;
// RFC 3986 §6.2.2.1). The path stays case-sensitive.
func (i *Introspector) audienceOK(aud []string) bool {
	for _, a := range aud {
		if slices.Contains(i.cfg.Audiences, a) {
			return true
		}
	}
	for _, a := range aud {
		if c, ok := jwtclaims.CanonicalURI(a); ok && slices.Contains(i.canonAud, c) {
			return true
		}
	}
	return false
}

// checkTimes applies RFC 7519 §4.1.4-4.1.6 with the configured leeway. It
// also runs on every cache hit.
func (i *Introspector) checkTimes(c *validate.Claims, now time.Time) error {
	lw := i.cfg.Leeway
	if !now.Before(c.Expiry.Add(lw)) {
		return errExpired
	}
	if !c.NotBefore.IsZero() && now.Add(lw).Before(c.NotBefore) {
		return errNotYetValid
	}
	if !c.IssuedAt.IsZero() && now.Add(lw).Before(c.IssuedAt) {
		return errIssuedAt
	}
	return nil
}

// optString decodes an optional JSON string; absent gives "".
func optString(raw []byte) (string, bool) {
	if raw == nil {
		return "", true
	}
	return strictjson.String(raw)
}

// audience decodes "aud": a string or an array of strings (RFC 7519
// §4.1.3, RFC 7662 §2.2).
func audience(raw []byte) ([]string, bool) {
	if s, ok := strictjson.String(raw); ok {
		return []string{s}, true
	}
	return strictjson.Strings(raw)
}

// splitScope splits an RFC 7662 §2.2 "scope" (space-separated, RFC 6749
// §3.3 scope-tokens). Runs of spaces are tolerated; any other byte outside
// %x21 / %x23-5B / %x5D-7E is refused. Returns nil for no scopes.
func splitScope(s string) ([]string, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != ' ' && (c < 0x21 || c > 0x7e || c == '"' || c == '\\') {
			return nil, false
		}
	}
	f := strings.Fields(s)
	if len(f) == 0 {
		return nil, true
	}
	return f, true
}
