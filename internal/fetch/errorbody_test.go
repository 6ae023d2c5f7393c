package fetch

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestStatusErrorBody: a 4xx JSON answer keeps its (bounded) body for the
// caller to read an OAuth error code from; nothing else does.
func TestStatusErrorBody(t *testing.T) {
	big := `{"error":"x","pad":"` + strings.Repeat("a", MaxErrorBodyBytes) + `"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		if ct := r.URL.Query().Get("ct"); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.WriteHeader(code)
		if r.URL.Query().Get("big") != "" {
			_, _ = io.WriteString(w, big)
			return
		}
		_, _ = io.WriteString(w, `{"error":"invalid_request"}`)
	}))
	defer srv.Close()
	tests := []struct {
		query string
		want  string
	}{
		{"code=400&ct=application/json", `{"error":"invalid_request"}`},
		{"code=401&ct=application/json%3Bcharset=utf-8", `{"error":"invalid_request"}`},
		{"code=400&ct=application/problem%2Bjson", `{"error":"invalid_request"}`},
		{"code=400&ct=text/html", ""},
		{"code=400", ""},
		{"code=500&ct=application/json", ""},
		{"code=302&ct=application/json", ""},
		{"code=400&ct=application/json&big=1", ""},
	}
	c := NewClient(ClientConfig{})
	for _, tt := range tests {
		_, err := Get(t.Context(), c, srv.URL+"/?"+tt.query, 1<<10)
		var se *StatusError
		if !errors.As(err, &se) {
			t.Fatalf("%s: err = %v, want a StatusError", tt.query, err)
		}
		if string(se.Body) != tt.want {
			t.Errorf("%s: Body = %q, want %q", tt.query, se.Body, tt.want)
		}
	}
}
