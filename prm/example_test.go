package prm_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mcpguard/mcpguard/prm"
)

func ExampleMetadataURL() {
	for _, res := range []string{
		"https://example.com/public/mcp",
		"https://example.com/",
		"https://example.com:8443/mcp",
	} {
		u, _ := prm.MetadataURL(res)
		fmt.Println(u)
	}
	root, _ := prm.MetadataURL("https://example.com") // the root form: the origin's
	fmt.Println(root)
	// Output:
	// https://example.com/.well-known/oauth-protected-resource/public/mcp
	// https://example.com/.well-known/oauth-protected-resource
	// https://example.com:8443/.well-known/oauth-protected-resource/mcp
	// https://example.com/.well-known/oauth-protected-resource
}

func ExampleHandler() {
	h, err := prm.Handler(prm.Metadata{
		Resource:             "https://mcp.example.com/mcp",
		AuthorizationServers: []string{"https://auth.example.com"},
		ScopesSupported:      []string{"files:read"},
	})
	if err != nil {
		panic(err)
	}
	inserted, root, err := prm.Paths("https://mcp.example.com/mcp")
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle(inserted, h)
	mux.Handle(root, h)

	for _, path := range []string{inserted, root} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println(rec.Code, path)
		fmt.Println(rec.Body)
	}
	// Output:
	// 200 /.well-known/oauth-protected-resource/mcp
	// {"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"],"scopes_supported":["files:read"]}
	// 200 /.well-known/oauth-protected-resource
	// {"resource":"https://mcp.example.com","authorization_servers":["https://auth.example.com"],"scopes_supported":["files:read"]}
}

func ExampleParse() {
	// A client parses a fetched metadata document (the client package
	// fetches it) and checks it names the resource it asked about.
	body := []byte(`{"resource":"https://mcp.example.com/mcp",
		"authorization_servers":["https://auth.example.com"],
		"scopes_supported":["files:read","offline_access"]}`)
	m, err := prm.Parse(body, "https://mcp.example.com/mcp")
	if err != nil {
		panic(err)
	}
	fmt.Println(m.AuthorizationServers, m.ScopesSupported)

	_, err = prm.Parse(body, "https://mcp.example.com/other")
	fmt.Println(err)
	// Output:
	// [https://auth.example.com] [files:read offline_access]
	// prm: resource mismatch
}

func ExampleMetadata_Validate() {
	m := prm.Metadata{
		Resource:             "https://mcp.example.com/mcp",
		AuthorizationServers: []string{"https://auth.example.com"},
		ScopesSupported:      []string{"files:read", "offline_access"},
	}
	fmt.Println(m.Validate())
	// Output:
	// prm: invalid metadata: scopes_supported[1]: offline_access is not a resource scope
}
