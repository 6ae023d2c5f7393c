package validate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/internal/scopetoken"
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

var (
	errScopeType = fmt.Errorf("%w: scope is not a string, or scp is not a string or an array of strings", errMalformed)
	errScopeChar = fmt.Errorf("%w: scope token has a character outside RFC 6749 §3.3", errMalformed)
)

// HasScope reports whether the token grants scope s (exact, case-sensitive
// comparison, RFC 6749 §3.3).
func (c *Claims) HasScope(s string) bool {
	return s != "" && slices.Contains(c.Scopes, s)
}

// scopes decodes "scope" (RFC 8693 §4.2: a JSON string of space-delimited
// scope tokens), or, when Config.AllowSCP is set and "scope" is absent,
// "scp" as such a string or as an array of single scope tokens. Runs of
// spaces are tolerated; any other character outside the RFC 6749 §3.3
// scope-token grammar is Error "malformed".
func (v *Validator) scopes(rc *rawClaims) ([]string, error) {
	switch {
	case rc.scope != "":
		s, ok := strictjson.String(rc.scope)
		if !ok {
			return nil, errScopeType
		}
		return splitScope(s)
	case v.cfg.AllowSCP && rc.scp != "":
		if s, ok := strictjson.String(rc.scp); ok {
			return splitScope(s)
		}
		list, ok := strictjson.Strings(rc.scp)
		if !ok {
			return nil, errScopeType
		}
		for _, s := range list {
			if !scopetoken.Valid(s) {
				return nil, errScopeChar
			}
		}
		if len(list) == 0 {
			return nil, nil
		}
		return list, nil
	}
	return nil, nil
}

// splitScope splits a space-delimited scope string into sub-strings of s.
func splitScope(s string) ([]string, error) {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			continue
		}
		if !scopetoken.ValidByte(s[i]) {
			return nil, errScopeChar
		}
		if i == 0 || s[i-1] == ' ' {
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	out := make([]string, 0, n)
	for f := range strings.SplitSeq(s, " ") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out, nil
}
