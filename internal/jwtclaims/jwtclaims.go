// Package jwtclaims holds the two readings of JWT claim text that every
// token validator of the module shares, so that access tokens (validate)
// and introspection responses (validate/introspect) read them by one rule:
// a NumericDate (RFC 7519 §2) and the canonical form of a resource URI for
// audience matching (MCP "Canonical Server URI").
package jwtclaims

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// CanonicalURI lower-cases the scheme and host of an absolute URI of the
// form scheme://host[:port][path…], leaving everything after the authority
// untouched, and reports false for anything else (including URIs with
// userinfo). Audience matching uses it as a fallback after the exact
// comparison: the MCP authorization spec (Canonical Server URI) says
// implementations SHOULD accept uppercase scheme and host components.
func CanonicalURI(s string) (string, bool) {
	i := strings.Index(s, "://")
	if i <= 0 {
		return "", false
	}
	end := len(s)
	if j := strings.IndexAny(s[i+3:], "/?#"); j >= 0 {
		end = i + 3 + j
	}
	b := []byte(s)
	for k := 0; k < end; k++ {
		switch c := b[k]; {
		case c >= 0x80, c == '@':
			// Hosts are ASCII (RFC 3986 §3.2.2); Unicode case mapping would
			// fold look-alikes such as the Kelvin sign onto "k". Userinfo is
			// case-sensitive and never part of a resource identifier.
			return "", false
		case 'A' <= c && c <= 'Z':
			b[k] = c + ('a' - 'A')
		}
	}
	return string(b), true
}

// MaxNumericDate is 9999-12-31T23:59:59Z, the latest NumericDate accepted.
const MaxNumericDate = 253402300799

// NumericDate decodes a NumericDate (RFC 7519 §2): a JSON number of seconds
// since the epoch, possibly fractional. Strings, negative values, values
// after year 9999 and values that overflow float64 are rejected. The range
// is checked on the float64 before any integer conversion, so the result is
// the same on every architecture. v is the raw text of a JSON value that
// strictjson has checked, so a leading digit or '-' means a JSON number.
func NumericDate(v string) (time.Time, bool) {
	if v == "" || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return time.Time{}, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f <= MaxNumericDate) {
		return time.Time{}, false
	}
	sec := math.Floor(f)
	nsec := math.Round((f - sec) * 1e9)
	if nsec >= 1e9 {
		sec++
		nsec = 0
	}
	return time.Unix(int64(sec), int64(nsec)).UTC(), true
}

// Defaults that validate and validate/introspect apply alike to zero
// values of their Config.
const (
	// DefaultLeeway is the clock skew tolerated on "exp", "nbf" and "iat".
	DefaultLeeway = 30 * time.Second
	// DefaultMaxTokenBytes is the largest raw token accepted.
	DefaultMaxTokenBytes = 8192
)
