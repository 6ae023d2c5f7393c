package middleware

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpguard/mcpguard/validate"
)

var (
	errOtherScheme = fmt.Errorf("%w: authorization scheme is not Bearer", errNoToken)
	errNoBearer    = fmt.Errorf("%w: bearer scheme without a token", errMalformedHeader)
	errBearerChars = fmt.Errorf("%w: token is not an RFC 6750 b64token", errMalformedHeader)
	errBearerSep   = fmt.Errorf("%w: scheme and token must be separated by spaces", errMalformedHeader)
)

// bearerToken returns the access token of r's Authorization header
// (RFC 6750 §2.1: "Bearer" 1*SP b64token, the scheme case-insensitive).
// Only the header is read: a form-encoded body parameter (RFC 6750 §2.2) is
// never looked for, and the body is never consumed. It returns
//
//   - errTokenInQuery if the URL query has an access_token parameter
//     (RFC 6750 §2.3), whether or not the header also has a token: MCP
//     forbids tokens in the query string;
//   - errMultipleTokens if there is more than one Authorization line;
//   - errNoToken if there is no Authorization header, or its scheme is
//     not Bearer (Basic, DPoP, …): such a request has no bearer
//     credentials, and gets the plain 401 challenge;
//   - errMalformedHeader if the scheme is Bearer but the rest is not
//     1*SP followed by one b64token.
//
// With checkChars false it leaves out the b64token check, for a caller whose validator refuses every token that is
// not one (see Middleware.authenticate).
func bearerToken(r *http.Request, checkChars bool) (string, error) {
	if r.URL != nil && r.URL.RawQuery != "" && queryHasToken(r.URL.RawQuery) {
		return "", errTokenInQuery
	}
	vals := r.Header["Authorization"]
	switch len(vals) {
	case 0:
		return "", errNoToken
	case 1:
		if !checkChars {
			return splitBearer(vals[0])
		}
		return parseBearer(vals[0])
	default:
		return "", errMultipleTokens
	}
}

// syntaxAfterValidation reports whether the b64token check of a bearer
// token may wait until validation has failed: with a validate.Validator,
// which accepts only compact JWS tokens (b64tokens all), and no DPoP. The
// byte-wise check is most of the cost of a cached 4 KiB token.
func (m *Middleware) syntaxAfterValidation() bool {
	_, jwsOnly := m.cfg.Validator.(*validate.Validator)
	return jwsOnly && m.dpop == nil
}

// afterValidation runs the deferred b64token check on a token that failed
// validation, so that the answer is the one the check would have given
// first (400 invalid_request for a malformed header).
func (m *Middleware) afterValidation(tok string, err error) error {
	if err != nil && m.syntaxAfterValidation() && !isB64Token(tok) {
		return errBearerChars
	}
	return err
}

// parseBearer parses one Authorization field value.
func parseBearer(v string) (string, error) {
	tok, err := splitBearer(v)
	if err == nil && !isB64Token(tok) {
		return "", errBearerChars
	}
	return tok, err
}

// splitBearer is parseBearer without the b64token check.
func splitBearer(v string) (string, error) {
	i := 0
	for i < len(v) && v[i] != ' ' && v[i] != '\t' {
		i++
	}
	if !isBearerScheme(v[:i]) {
		return "", errOtherScheme
	}
	if i == len(v) {
		return "", errNoBearer
	}
	rest := v[i:]
	j := 0
	for j < len(rest) && rest[j] == ' ' {
		j++
	}
	if j == 0 {
		return "", errBearerSep
	}
	tok := rest[j:]
	if tok == "" {
		return "", errNoBearer
	}
	return tok, nil
}

// isBearerScheme reports whether s is "Bearer" in any case, as
// strings.EqualFold(s, "Bearer") does: no rune outside ASCII folds to one
// of its letters (only U+017F and U+212A fold into ASCII, to s and k).
func isBearerScheme(s string) bool {
	return len(s) == 6 && s[0]|0x20 == 'b' && s[1]|0x20 == 'e' && s[2]|0x20 == 'a' &&
		s[3]|0x20 == 'r' && s[4]|0x20 == 'e' && s[5]|0x20 == 'r'
}

// isB64Token reports whether s is an RFC 6750 §2.1 b64token:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	i := 0
	for i < len(s) && isB64Char(s[i]) {
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

func isB64Char(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '.', '_', '~', '+', '/':
		return true
	}
	return false
}

// queryHasToken reports whether the raw query has an access_token
// parameter, in any percent-encoding of its name. It parses only when the
// query could contain one.
func queryHasToken(raw string) bool {
	if !strings.Contains(raw, "access_token") && !strings.Contains(raw, "%") {
		return false
	}
	q, _ := url.ParseQuery(raw) // keeps the well-formed pairs on error
	_, ok := q["access_token"]
	return ok
}
