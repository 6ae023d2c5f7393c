package review

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/validate/introspect"
)

func TestIntrospectAudienceKelvin(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"active":true,"iss":%q,"aud":"https://mcp.\u212Aiwi.example/mcp","exp":%d,"sub":"x"}`, srv0URL, time.Now().Unix()+600)
	}))
	defer srv.Close()
	srv0URL = srv.URL
	in, err := introspect.New(introspect.Config{Issuer: srv.URL, Endpoint: srv.URL + "/introspect", Audiences: []string{"https://mcp.kiwi.example/mcp"}, ClientID: "rs", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := in.Validate(t.Context(), "opaque-token")
	if err == nil {
		t.Errorf("introspection result for aud %q accepted", c.Audience)
	}
}

var srv0URL string
