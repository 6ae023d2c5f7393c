package challenge_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mcpguard/mcpguard/challenge"
)

const metadataURL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"

func ExampleChallenge_String() {
	c := challenge.Challenge{
		Error:            challenge.InvalidToken,
		ErrorDescription: "The access token expired",
		Scope:            []string{"files:read"},
		ResourceMetadata: metadataURL,
	}
	fmt.Println(c.String())
	fmt.Println(c.StatusCode())
	// Output:
	// Bearer error="invalid_token", scope="files:read", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", error_description="The access token expired"
	// 401
}

func ExampleStepUp() {
	// offline_access is never put in a challenge (MCP 2026-07-28).
	c := challenge.StepUp(metadataURL, "files:write", "offline_access")
	fmt.Println(c.StatusCode(), c.String())
	// Output:
	// 403 Bearer error="insufficient_scope", scope="files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
}

func ExampleWrite() {
	rec := httptest.NewRecorder()
	challenge.Write(rec, challenge.Challenge{ResourceMetadata: metadataURL, Scope: []string{"files:read"}})
	fmt.Println(rec.Code)
	fmt.Println(rec.Header().Get("WWW-Authenticate"))
	fmt.Println(rec.Header().Get("Cache-Control"))
	fmt.Println(rec.Body)
	// Output:
	// 401
	// Bearer scope="files:read", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	// no-store
	// {"error":"unauthorized"}
}

func ExampleParseAll_oneValue() {
	cs, err := challenge.ParseAll([]string{`Basic realm="legacy", Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="` + metadataURL + `"`})
	if err != nil {
		panic(err)
	}
	for _, c := range cs {
		fmt.Printf("%s error=%q scope=%q rm=%q\n", c.Scheme, c.Error, c.Scope, c.ResourceMetadata)
	}
	// Output:
	// Basic error="" scope=[] rm=""
	// Bearer error="insufficient_scope" scope=["files:read" "files:write"] rm="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
}

func ExampleParseAll() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		challenge.Write(w,
			challenge.Challenge{Error: challenge.InvalidToken, ResourceMetadata: metadataURL},
			challenge.Challenge{Scheme: "DPoP", Params: map[string]string{"algs": "ES256"}},
		)
	}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	cs, err := challenge.ParseAll(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode, len(cs), cs[0].ResourceMetadata, cs[1].Params["algs"])
	// Output:
	// 401 2 https://mcp.example.com/.well-known/oauth-protected-resource/mcp ES256
}
