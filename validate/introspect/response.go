package introspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/validate"
)

// Wrapped errors for response checks. They name members, never values.
var (
	errBody        = fmt.Errorf("%w: introspection response is not a UTF-8 JSON object", validate.ErrMalformed)
	errDuplicate   = fmt.Errorf("%w: introspection response repeats a member name", validate.ErrMalformed)
	errNoActive    = fmt.Errorf("%w: introspection response has no active member", validate.ErrMalformed)
	errActiveType  = fmt.Errorf("%w: introspection response active is not a JSON boolean", validate.ErrMalformed)
	errStringType  = fmt.Errorf("%w: introspection response iss, sub, jti, client_id, scope or token_type is not a string", validate.ErrMalformed)
	errAudType     = fmt.Errorf("%w: introspection response aud is not a string or an array of strings", validate.ErrMalformed)
	errTimeType    = fmt.Errorf("%w: introspection response exp, nbf or iat is not a NumericDate in range", validate.ErrMalformed)
	errScopeChar   = fmt.Errorf("%w: introspection response scope has a character outside RFC 6749 §3.3", validate.ErrMalformed)
	errTenantType  = fmt.Errorf("%w: introspection response tenant claim is not a string", validate.ErrMalformed)
	errInactive    = fmt.Errorf("%w: introspection response active is false", validate.ErrInactive)
	errTokenType   = fmt.Errorf("%w: introspection response token_type is not Bearer", validate.ErrType)
	errIssuer      = fmt.Errorf("%w: introspection response iss differs from the configured issuer", validate.ErrIssuer)
	errMissingAud  = fmt.Errorf("%w: aud (introspection response)", validate.ErrMissingClaim)
	errMissingExp  = fmt.Errorf("%w: exp (introspection response)", validate.ErrMissingClaim)
	errAudience    = fmt.Errorf("%w: no configured audience in introspection response aud", validate.ErrAudience)
	errExpired     = fmt.Errorf("%w: introspection response exp", validate.ErrExpired)
	errNotYetValid = fmt.Errorf("%w: introspection response nbf", validate.ErrNotYetValid)
	errIssuedAt    = fmt.Errorf("%w: introspection response iat", validate.ErrIssuedAt)
)

// members holds the raw JSON values of the response members this package
// reads; nil means absent.
type members struct {
	active, iss, aud, exp, nbf, iat, sub, jti, clientID, scope, tokenType, cnf, tenant json.RawMessage
}

// readMembers splits body, an introspection response (RFC 7662 §2.2),
// into its top-level members. body must be one JSON object in valid
// UTF-8, without trailing data, and no two member names may be equal
// under the case folding of encoding/json, which [validate.Claims.Decode]
// uses: otherwise Decode could see a different value than the one checked.
func readMembers(body []byte, tenantClaim string) (*members, error) {
	if !utf8.Valid(body) {
		return nil, errBody
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errBody
	}
	m := &members{}
	seen := make(map[string]struct{}, 16)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, errBody
		}
		name, ok := t.(string)
		if !ok {
			return nil, errBody
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errBody
		}
		f := fold(name)
		if _, dup := seen[f]; dup {
			return nil, errDuplicate
		}
		seen[f] = struct{}{}
		if tenantClaim != "" && name == tenantClaim {
			m.tenant = v
		}
		if dst := m.field(name); dst != nil {
			*dst = v
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, errBody
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errBody
	}
	return m, nil
}

func (m *members) field(name string) *json.RawMessage {
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

// fold maps name so that fold(a) == fold(b) exactly when encoding/json
// would match a and b to the same struct field: ASCII letters by case, other
// runes by their Unicode simple case-folding orbit, as encoding/json's
// foldName does.
func fold(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteByte(byte(r))
			continue
		}
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// parseResponse checks an introspection response and returns the claims
// of an active token. Check order: structure and member types
// (ErrMalformed), active (ErrMalformed, ErrInactive), token type
// (ErrType), presence (ErrMissingClaim), issuer (ErrIssuer), audience
// (ErrAudience), then exp, nbf and iat (ErrExpired, ErrNotYetValid,
// ErrIssuedAt).
func (i *Introspector) parseResponse(body []byte, now time.Time) (*validate.Claims, error) {
	m, err := readMembers(body, i.cfg.TenantClaim)
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
	if c.Confirmation, err = validate.ParseConfirmation(m.cnf, i.cfg.AllowConfirmation); err != nil {
		return nil, err
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
		raw json.RawMessage
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
		raw json.RawMessage
		dst *time.Time
	}{{m.exp, &c.Expiry}, {m.nbf, &c.NotBefore}, {m.iat, &c.IssuedAt}} {
		if f.raw == nil {
			continue
		}
		if *f.dst, ok = validate.ParseNumericDate(string(f.raw)); !ok {
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
		if !strings.EqualFold(tt, "Bearer") && !strings.EqualFold(tt, "access_token") && (c.Confirmation == nil || !strings.EqualFold(tt, "DPoP")) {
			return errTokenType
		}
	}
	if m.exp == nil {
		return errMissingExp
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
		if c, ok := validate.CanonicalURI(a); ok && slices.Contains(i.canonAud, c) {
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
func optString(raw json.RawMessage) (string, bool) {
	if raw == nil {
		return "", true
	}
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// audience decodes "aud": a string or an array of strings (RFC 7519
// §4.1.3, RFC 7662 §2.2).
func audience(raw json.RawMessage) ([]string, bool) {
	if s, ok := optString(raw); ok {
		return []string{s}, true
	}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, false
	}
	return list, true
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

// foldRune returns the smallest rune of r's simple case-folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
