// Package mcprev is the one rule of which MCP protocol revisions are
// "modern": 2026-07-28 or later, the revisions without initialize or
// sessions, with standard request headers and operation-only scope
// challenges. The middleware and the stdio bridge both decide by it.
package mcprev

// Modern is the first modern revision.
const Modern = "2026-07-28"

// IsModern reports whether v is a revision date (YYYY-MM-DD, digits
// only) of Modern or later. Anything else, including a date spelled
// otherwise, is not.
func IsModern(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if i != 4 && i != 7 && (v[i] < '0' || v[i] > '9') {
			return false
		}
	}
	return v >= Modern
}
