package scopetoken_test

import (
	"fmt"

	"github.com/mcpguard/mcpguard/internal/scopetoken"
)

func Example() {
	fmt.Println(scopetoken.Valid("files:read"), scopetoken.Valid("files read"))
	fmt.Println(scopetoken.ValidList("mcp files:read"), scopetoken.ValidList("mcp  files:read"))
	// Output:
	// true false
	// true false
}
