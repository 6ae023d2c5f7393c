package audit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/cmd/internal/audit"
	"github.com/mcpguard/mcpguard/prm"
)

// Example audits a minimal protected endpoint without credentials: it
// answers every MCP request with a 401 challenge and serves its
// protected-resource metadata.
func Example() {
	ts := httptest.NewUnstartedServer(nil)
	endpoint := "http://" + ts.Listener.Addr().String() + "/mcp"
	metaURL, _ := prm.MetadataURL(endpoint)
	meta, _ := prm.Handler(prm.Metadata{Resource: endpoint, AuthorizationServers: []string{"http://127.0.0.1:1"}})
	mux := http.NewServeMux()
	mux.Handle("/.well-known/", meta)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		c := challenge.Challenge{Scope: []string{"mcp:tools"}, ResourceMetadata: metaURL}
		if r.Header.Get("Authorization") != "" {
			c.Error = challenge.InvalidToken
		}
		challenge.Write(w, c)
	})
	ts.Config.Handler = mux
	ts.Start()
	defer ts.Close()

	a, _ := audit.New(audit.Config{Endpoint: endpoint, Interval: -1})
	rep, _ := a.Run(context.Background())
	for _, r := range rep.Results {
		switch r.ID {
		case audit.CH401, audit.CHNoError, audit.PRMResource, audit.TOKAlgNone, audit.ASMetadata, audit.StepUp:
			fmt.Println(r.ID, r.Verdict)
		}
	}
	// Output:
	// CH-401 pass
	// CH-NO-ERROR pass
	// PRM-RESOURCE pass
	// AS-METADATA fail
	// TOK-ALG-NONE pass
	// STEP-UP skip
}
