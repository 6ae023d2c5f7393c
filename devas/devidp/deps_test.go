package devidp

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the development IdP uses the standard library and go-jose
// only; it must not import devas (devas trusts it through its keys).
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct:  true,
		Allowed: []string{"github.com/go-jose/go-jose/v4/..."},
	}.Check(t, ".")
}
