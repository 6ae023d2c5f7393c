package introspect_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/validate/introspect"
)

// The audience fallback of introspection folds only ASCII case: an "aud"
// spelled with KELVIN SIGN (U+212A) names another resource and is refused.
func TestIntrospectAudienceUnicodeLookalikeRefused(t *testing.T) {
	var url string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"active":true,"iss":%q,"aud":"https://mcp.\u212Aiwi.example/mcp","exp":%d,"sub":"x"}`, url, time.Now().Unix()+600)
	}))
	defer srv.Close()
	url = srv.URL
	in, err := introspect.New(introspect.Config{Issuer: srv.URL, Endpoint: srv.URL + "/introspect",
		Audiences: []string{"https://mcp.kiwi.example/mcp"}, ClientID: "rs", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := in.Validate(t.Context(), "opaque-token"); err == nil {
		t.Errorf("introspection result for aud %q accepted", c.Audience)
	}
}
