package client

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestTokenOnlyToResourceOrigin checks the origin decision with a
// recording Base (no network).
func TestTokenOnlyToResourceOrigin(t *testing.T) {
	tests := []struct {
		name     string
		resource string
		url      string
		host     string // Host override
		want     bool
	}{
		{"same URL", "https://mcp.example.com/mcp", "https://mcp.example.com/mcp", "", true},
		{"other path, same origin", "https://mcp.example.com/mcp", "https://mcp.example.com/other?q=1", "", true},
		{"explicit default port", "https://mcp.example.com/mcp", "https://mcp.example.com:443/mcp", "", true},
		{"default port in resource", "https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp", "", true},
		{"host case", "https://mcp.example.com/mcp", "https://MCP.Example.com/mcp", "", true},
		{"matching Host override", "https://mcp.example.com/mcp", "https://mcp.example.com/mcp", "mcp.example.com:443", true},
		{"other host", "https://mcp.example.com/mcp", "https://evil.example.com/mcp", "", false},
		{"suffix host", "https://mcp.example.com/mcp", "https://mcp.example.com.evil.example/mcp", "", false},
		{"other port", "https://mcp.example.com/mcp", "https://mcp.example.com:8443/mcp", "", false},
		{"http instead of https", "https://mcp.example.com/mcp", "http://mcp.example.com/mcp", "", false},
		{"http on 443", "https://mcp.example.com/mcp", "http://mcp.example.com:443/mcp", "", false},
		{"other Host override", "https://mcp.example.com/mcp", "https://mcp.example.com/mcp", "evil.example.com", false},
		{"localhost vs 127.0.0.1", "http://127.0.0.1:8080/mcp", "http://localhost:8080/mcp", "", false},
		{"ipv6 loopback", "http://[::1]:8080/mcp", "http://[::1]:8080/mcp", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				got = r.Header.Get("Authorization")
				return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
			})
			tr, err := New(Config{Resource: tt.resource, TokenSource: staticToken("a"), Authorizer: &fakeAuthz{}, Base: base})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, tt.url, nil)
			req.Host = tt.host
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if sent := got == "Bearer tok:a"; sent != tt.want {
				t.Errorf("token sent = %v (Authorization %q), want %v", sent, got, tt.want)
			}
			if req.Header.Get("Authorization") != "" {
				t.Error("caller's request was modified")
			}
		})
	}
}

// TestTokenNeverSentToOtherOrigin uses two loopback servers: the resource
// redirects to the other one, which records the Authorization headers it
// receives.
func TestTokenNeverSentToOtherOrigin(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/back" { // and back to the resource
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
			return
		}
		_, _ = io.WriteString(w, "other")
	}))
	defer other.Close()
	f := newFake(t)
	f.respond = func(f *fake, n int, w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("redirect"); to != "" {
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
			return
		}
		scoped(f, n, w, r)
	}
	tr, err := New(Config{Resource: f.resource, Authorizer: &fakeAuthz{}})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: tr}
	for _, u := range []string{
		f.resource,                            // authorizes: 401, then the token
		other.URL + "/direct",                 // another port of 127.0.0.1
		f.resource + "?redirect=" + other.URL, // redirect to the other origin
		other.URL + "/back?to=" + f.resource,  // other origin redirecting to the resource
	} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if req.Header.Get("Authorization") != "" {
			t.Error("caller's request was modified")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Errorf("other origin got %d requests, want 3", len(seen))
	}
	for i, a := range seen {
		if a != "" {
			t.Errorf("other origin request %d carried Authorization %q", i, a)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// 401, authorized retry, redirecting request, redirected-back request.
	if want := []string{"", "Bearer tok:files:read", "Bearer tok:files:read", "Bearer tok:files:read"}; strings.Join(f.authz, "|") != strings.Join(want, "|") {
		t.Errorf("resource Authorization headers = %q, want %q", f.authz, want)
	}
}
