package challenge

import (
	"net/http"
	"sort"
	"strings"

	"github.com/mcpguard/mcpguard/internal/httptoken"
)

// String renders c as one WWW-Authenticate field value (RFC 9110 §11.6.1),
// following the order and the sanitising rules in the package doc. It never
// returns a value containing CR, LF or other control characters except tab.
// A challenge that would render no auth-param and no token68 (the zero
// Challenge, or one whose every parameter was dropped) renders as "": RFC
// 6750 §3 requires "one or more auth-param values" after Bearer, so a bare
// scheme is never produced. [Challenge.Err] reports that case.
func (c Challenge) String() string {
	n := c.normalize()
	if n.empty() {
		return ""
	}
	var b strings.Builder
	b.WriteString(n.Scheme)
	if n.Token68 != "" {
		b.WriteByte(' ')
		b.WriteString(n.Token68)
		return b.String()
	}
	first := true
	param := func(name, value string) {
		if first {
			b.WriteByte(' ')
			first = false
		} else {
			b.WriteString(", ")
		}
		b.WriteString(name)
		b.WriteByte('=')
		writeQuoted(&b, value)
	}
	if n.Realm != "" {
		param("realm", n.Realm)
	}
	if n.Error != "" {
		param("error", string(n.Error))
	}
	if len(n.Scope) > 0 {
		param("scope", strings.Join(n.Scope, " "))
	}
	if n.ResourceMetadata != "" {
		param("resource_metadata", n.ResourceMetadata)
	}
	if n.ErrorDescription != "" {
		param("error_description", n.ErrorDescription)
	}
	for _, k := range sortedKeys(n.Params) {
		param(k, n.Params[k])
	}
	return b.String()
}

// Write answers the request with the given challenges: one WWW-Authenticate
// field line per challenge (replacing any already set), the status of the
// first challenge ([Challenge.StatusCode]), Cache-Control: no-store,
// Content-Type: application/json, X-Content-Type-Options: nosniff and a
// fixed small body such as
// {"error":"invalid_token"}; a challenge without an error code gets
// {"error":"unauthorized"}. Caller-supplied descriptions never reach the
// body.
//
// A challenge without parameters ([Challenge.Err]) is never rendered: RFC
// 6750 §3 forbids a bare "Bearer". Write then still refuses the request
// (the status and body of the first challenge, 401 with no challenges) so
// that access stays denied, sends only the challenges that render, and
// returns an error wrapping [ErrNoParams]: a 401 without WWW-Authenticate
// breaks RFC 9110 §15.5.2, so fix the caller. Otherwise it returns nil.
func Write(w http.ResponseWriter, cs ...Challenge) error {
	var err error
	if len(cs) == 0 {
		cs = []Challenge{{}}
	}
	h := w.Header()
	h.Del("WWW-Authenticate")
	for _, c := range cs {
		if s := c.String(); s != "" {
			h.Add("WWW-Authenticate", s)
		} else {
			err = ErrNoParams
		}
	}
	first := cs[0].normalize()
	code := string(first.Error)
	if code == "" {
		code = "unauthorized"
	}
	// code matches the RFC 6750 error charset, which excludes '"' and '\',
	// so it needs no JSON escaping.
	body := `{"error":"` + code + `"}`
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(first.StatusCode())
	_, _ = w.Write([]byte(body))
	return err
}

// Err returns an error wrapping [ErrNoParams] if c renders no auth-param
// and no token68 (see [Challenge.String]), and nil otherwise. Check it
// where a challenge is built from configuration, once, instead of
// discovering an empty header on the wire.
func (c Challenge) Err() error {
	if c.normalize().empty() {
		return ErrNoParams
	}
	return nil
}

// empty reports whether the normalized challenge n has nothing to render
// after its scheme.
func (n Challenge) empty() bool {
	return n.Realm == "" && n.Error == "" && len(n.Scope) == 0 && n.ResourceMetadata == "" &&
		len(n.Params) == 0 && n.Token68 == ""
}

// standardDescription is the fallback error_description for a known code
// whose caller-supplied description is not in the RFC 6750 charset. The
// texts paraphrase RFC 6750 §3.1.
func standardDescription(e ErrorCode) string {
	switch e {
	case InvalidRequest:
		return "The request is malformed"
	case InvalidToken:
		return "The access token is invalid"
	case InsufficientScope:
		return "The request requires higher privileges than provided by the access token"
	}
	return ""
}

// normalize returns the challenge exactly as String renders it, so that
// parse(c.String()) == []Challenge{c.normalize()} for every c.
func (c Challenge) normalize() Challenge {
	var n Challenge
	switch {
	case c.Scheme == "" || !isToken(c.Scheme) || strings.EqualFold(c.Scheme, "Bearer"):
		n.Scheme = "Bearer"
	default:
		n.Scheme = c.Scheme
	}
	if isSafeValue(c.Realm) {
		n.Realm = c.Realm
	}
	if c.Error != "" {
		n.Error = c.Error
		if !isErrorChars(string(c.Error)) {
			n.Error = InvalidToken
		}
		switch {
		case c.ErrorDescription == "":
		case isErrorChars(c.ErrorDescription):
			n.ErrorDescription = c.ErrorDescription
		default:
			n.ErrorDescription = standardDescription(n.Error)
		}
	}
	n.Scope = cleanScopes(c.Scope)
	if isSafeValue(c.ResourceMetadata) {
		n.ResourceMetadata = c.ResourceMetadata
	}
	// Extension params: lower-cased names; on a case-insensitive clash the
	// name that sorts first (byte order, original spelling) wins.
	keys := make([]string, 0, len(c.Params))
	for k := range c.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := c.Params[k]
		lk := strings.ToLower(k)
		if !isToken(k) || isStandardParam(lk) || !isSafeValue(v) && v != "" {
			continue
		}
		if _, dup := n.Params[lk]; dup {
			continue
		}
		if n.Params == nil {
			n.Params = make(map[string]string)
		}
		n.Params[lk] = v
	}
	hasParams := n.Realm != "" || n.Error != "" || len(n.Scope) > 0 ||
		n.ResourceMetadata != "" || len(n.Params) > 0
	if !hasParams && isToken68(c.Token68) {
		n.Token68 = c.Token68
	}
	return n
}

func isStandardParam(lower string) bool {
	switch lower {
	case "realm", "error", "error_description", "scope", "resource_metadata":
		return true
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeQuoted writes s as an RFC 9110 §5.6.4 quoted-string, escaping '"'
// and '\' with a backslash. s has already passed isSafeValue or a stricter
// check.
func writeQuoted(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
}

// isSafeValue reports whether s is non-empty and consists of HTAB, SP and
// VCHAR only: safe inside a quoted-string on any HTTP version.
func isSafeValue(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && (c < 0x20 || c > 0x7e) {
			return false
		}
	}
	return true
}

// isErrorChars reports whether s is non-empty and within the RFC 6750 §3
// charset of error and error_description: %x20-21 / %x23-5B / %x5D-7E.
func isErrorChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// isToken reports whether s is an RFC 9110 §5.6.2 token.
func isToken(s string) bool { return httptoken.Valid(s) }

// isToken68Char reports whether c may appear in an RFC 9110 §11.2 token68
// before the trailing '=' padding.
func isToken68Char(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}

// isToken68 reports whether s is an RFC 9110 §11.2 token68:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isToken68(s string) bool {
	i := 0
	for i < len(s) && isToken68Char(s[i]) {
		i++
	}
	if i == 0 {
		return false
	}
	for i < len(s) && s[i] == '=' {
		i++
	}
	return i == len(s)
}
