package asmeta

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Discovery reads metadata with the strict JSON reader: a document that
// repeats a member (two "issuer"s: which one a decoder keeps differs), is
// not valid UTF-8, or spells a member in another case is not the issuer's
// metadata, and discovery goes on to the next URL or fails.
func TestDiscoverStrictJSON(t *testing.T) {
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	iss := srv.URL
	good := fmt.Sprintf(`"issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q,"response_types_supported":["code"]`, iss, iss+"/a", iss+"/t")
	tests := []struct {
		name, doc string
		wantErr   error
	}{
		{"valid", "{" + good + "}", nil},
		{"duplicate issuer", "{" + good + fmt.Sprintf(`,"issuer":%q`, "https://evil.example") + "}", ErrNotFound},
		{"duplicate nested", "{" + good + `,"x":{"a":1,"a":2}}`, ErrNotFound},
		{"invalid UTF-8", "{" + good + ",\"x\":\"\xff\"}", ErrNotFound},
		{"case variant of issuer only", fmt.Sprintf(`{"Issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q}`, iss, iss+"/a", iss+"/t"), ErrIssuerMismatch},
		{"trailing data", "{" + good + "}{}", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body = tt.doc
			_, err := Discover(t.Context(), NewGuardedClient(GuardConfig{InsecureAllowLoopback: true}), iss)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Discover = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
