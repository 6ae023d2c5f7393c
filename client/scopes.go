package client

import (
	"strings"

	"github.com/mcpguard/mcpguard/internal/scopetoken"
)

// offlineAccess is never taken from a server (challenge scope or
// scopes_supported): MCP 2026-07-28 §Refresh Tokens says refresh tokens are
// not a resource requirement, and only the client decides to ask for one.
const offlineAccess = "offline_access"

// cleanScopes keeps the valid RFC 6749 §3.3 scope tokens of in, in order,
// without duplicates. keepOffline says whether "offline_access" is kept
// (true for scopes the application supplied, false for scopes a server
// supplied). It returns nil when nothing is left.
func cleanScopes(in []string, keepOffline bool) []string {
	var out []string
	seen := make(map[string]bool, len(in))
	for _, s := range in {
		if !isScopeToken(s) || (!keepOffline && s == offlineAccess) || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// isScopeToken reports whether s is an RFC 6749 §3.3 scope-token:
// 1*( %x21 / %x23-5B / %x5D-7E ).
func isScopeToken(s string) bool { return scopetoken.Valid(s) }

// union returns the scopes of the lists in order of first appearance
// (stable: earlier lists first), without duplicates. It never returns an
// alias of an input.
func union(lists ...[]string) []string {
	var out []string
	seen := make(map[string]bool)
	for _, l := range lists {
		for _, s := range l {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// subset reports whether every scope of a is in one of the sets.
func subset(a []string, sets ...[]string) bool {
	in := make(map[string]bool)
	for _, set := range sets {
		for _, s := range set {
			in[s] = true
		}
	}
	for _, s := range a {
		if !in[s] {
			return false
		}
	}
	return true
}

// splitScope splits an RFC 6749 §3.3 space-delimited scope string.
func splitScope(s string) []string {
	return cleanScopes(strings.Split(s, " "), true)
}
