package deptest

import "testing"

// TestDeps: deptest is imported by every package's tests, so it imports
// the standard library only.
func TestDeps(t *testing.T) {
	DepChecker{}.Check(t, ".")
}
