package scopetoken

import "strings"

// Valid reports whether s is one RFC 6749 §3.3 scope-token: non-empty,
// printable ASCII except space, '"' and '\'.
func Valid(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !ValidByte(s[i]) {
			return false
		}
	}
	return true
}

// ValidList reports whether s is an RFC 6749 §3.3 scope: scope-tokens
// separated by single spaces, with no leading or trailing space. The
// empty string is not a scope.
func ValidList(s string) bool {
	if s == "" {
		return false
	}
	for tok := range strings.SplitSeq(s, " ") {
		if !Valid(tok) {
			return false
		}
	}
	return true
}

// ValidByte reports whether c may appear in a scope-token:
// %x21 / %x23-5B / %x5D-7E. It is for callers that split a scope string
// themselves without allocating (validate, on the token path).
func ValidByte(c byte) bool {
	return c >= 0x21 && c <= 0x7e && c != '"' && c != '\\'
}
