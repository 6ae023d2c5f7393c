// Package httptoken is the module's one implementation of the RFC 9110
// §5.6.2 token grammar, the syntax of an authentication scheme, an
// auth-param name and an HTTP field name:
//
//	token = 1*tchar
//	tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
//	        "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
//
// It imports the standard library only, so that leaf packages (challenge)
// may use it.
package httptoken

import "strings"

// Valid reports whether s is a token.
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

// ValidByte reports whether c is a tchar.
func ValidByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
