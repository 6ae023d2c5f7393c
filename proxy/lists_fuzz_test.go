package proxy

import (
	"bytes"
	"context"
	"testing"

	"github.com/mcpguard/mcpguard/internal/strictjson"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

type noValidator struct{}

func (noValidator) Validate(context.Context, string) (*validate.Claims, error) {
	return nil, validate.Error{Reason: "malformed"}
}

// FuzzListRewrite: whatever list answer an upstream sends, the rewrite
// either refuses it or returns valid JSON, and rewriting that again
// changes nothing (the annotation replaces, never accumulates; removed
// entries stay removed).
func FuzzListRewrite(f *testing.F) {
	m, err := middleware.New(middleware.Config{
		Validator: noValidator{},
		Metadata:  prm.Metadata{Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{"https://as.example.com"}},
		Scopes:    []string{"mcp:tools"},
		Operations: middleware.OperationPolicy{
			Tools:  map[string][]string{"admin": {"mcp:admin"}},
			Public: middleware.PublicOperations{Tools: []string{"open"}},
		},
		Lists: middleware.ListHide,
	})
	if err != nil {
		f.Fatal(err)
	}
	p := &middleware.Principal{Issuer: "https://as.example.com", Subject: "alice", Scopes: []string{"mcp:tools"}}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"admin"},{"name":"open","_meta":{"x":1}}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","securitySchemes":[],"_meta":null},{}, 3]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[ { "name" : "a" , "_meta" : { } } ]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"prompts":[{"name":"p","_meta":{"securitySchemes":1}}]}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, msg []byte, prompts bool) {
		method := "tools/list"
		if prompts {
			method = "prompts/list"
		}
		l := &listRewriter{m: m, p: p, method: method, id: []byte("1")}
		out, err := l.Rewrite(msg)
		if err != nil {
			return
		}
		if !bytes.Equal(out, msg) && strictjson.Valid(out) != nil {
			t.Fatalf("rewrite of %q is not valid JSON: %q", msg, out)
		}
		again, err := l.Rewrite(out)
		if err != nil {
			t.Fatalf("the rewrite %q of %q is refused: %v", out, msg, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("rewrite not idempotent:\n%q\n%q", out, again)
		}
	})
}
