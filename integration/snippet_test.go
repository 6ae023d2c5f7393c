package integration

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/internal/devmint"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// protect is the hand-wired snippet once in README.md ("Protect your own go-sdk
// server"), with the issuer and resource as parameters. Keep the two in
// sync: this test is what keeps the documented code compiling and working.
func protect(srv *mcp.Server, issuer, resource string) (http.Handler, error) {
	keys, err := jwks.New(jwks.Config{Issuer: issuer}) // jwks_uri from the issuer's metadata
	if err != nil {
		return nil, err
	}
	v, err := validate.New(validate.Config{
		Issuers:   []validate.Issuer{{Issuer: issuer, Keys: keys}},
		Audiences: []string{resource},
	})
	if err != nil {
		return nil, err
	}
	m, err := middleware.New(middleware.Config{Validator: v, Scopes: []string{"mcp:tools"},
		Metadata: prm.Metadata{Resource: resource, AuthorizationServers: []string{issuer}}})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	inserted, root := m.MetadataPaths()
	mux.Handle(inserted, m.MetadataHandler())
	mux.Handle(root, m.MetadataHandler())
	mux.Handle("/mcp", m.Handler(mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})))
	return mux, nil
}

func TestDocSnippet(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	asTS := httptest.NewUnstartedServer(nil)
	mcpTS := httptest.NewUnstartedServer(nil)
	issuer := "http://" + asTS.Listener.Addr().String()
	resource := "http://" + mcpTS.Listener.Addr().String() + "/mcp"
	as, err := devmint.New(devas.Config{Issuer: issuer, Resources: []string{resource}, Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	asTS.Config.Handler = as
	asTS.Start()
	t.Cleanup(asTS.Close)

	srv := mcp.NewServer(&mcp.Implementation{Name: "mine", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "hello"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]string, error) {
		p, ok := middleware.PrincipalFromContext(ctx)
		if !ok {
			return nil, nil, errors.New("no principal")
		}
		return nil, map[string]string{"hello": p.Subject}, nil
	})
	h, err := protect(srv, issuer, resource)
	if err != nil {
		t.Fatal(err)
	}
	mcpTS.Config.Handler = h
	mcpTS.Start()
	t.Cleanup(mcpTS.Close)

	r := rawPost(ctx, t, resource, rawRequest{revision: rev20260728, method: "tools/call", params: toolCall("hello", nil)})
	if r.status != http.StatusUnauthorized {
		t.Fatalf("without token: %d %s", r.status, r.body)
	}
	tok, err := as.IssueToken("snippet-user", "", "c", resource, []string{"mcp:tools"})
	if err != nil {
		t.Fatal(err)
	}
	r = rawPost(ctx, t, resource, rawRequest{token: tok, revision: rev20260728, method: "tools/call", params: toolCall("hello", nil)})
	if res := r.tool(t); res.IsError || string(res.StructuredContent) != `{"hello":"snippet-user"}` {
		t.Errorf("hello = %s", r.body)
	}
}
