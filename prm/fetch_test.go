package prm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
)

// fixtureServer serves testdata JSON with its "resource" rewritten to the
// server's own URL + "/mcp", and a few misbehaving routes.
func fixtureServer(t *testing.T) (srv *httptest.Server, other *httptest.Server) {
	t.Helper()
	other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"resource":"x","authorization_servers":["https://auth.example.com"]}`))
	}))
	t.Cleanup(other.Close)
	var self string
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc := func(name string) string {
			b, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Error(err)
			}
			return strings.ReplaceAll(string(b), "https://mcp.example.com/mcp", self+"/mcp")
		}
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp":
			if got := r.Header.Get("Accept"); got != "application/json" {
				t.Errorf("Accept = %q", got)
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = w.Write([]byte(doc("full.json")))
		case "/text":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(doc("full.json")))
		case "/no-type":
			w.Header()["Content-Type"] = nil
			_, _ = w.Write([]byte(doc("full.json")))
		case "/big":
			w.Header().Set("Content-Type", "application/json")
			pad := strings.Repeat(" ", MaxMetadataBytes)
			_, _ = w.Write([]byte(pad + doc("full.json")))
		case "/exactly-max":
			w.Header().Set("Content-Type", "application/json")
			d := doc("full.json")
			_, _ = w.Write([]byte(d + strings.Repeat(" ", MaxMetadataBytes-len(d))))
		case "/redirect-same":
			http.Redirect(w, r, "/.well-known/oauth-protected-resource/mcp", http.StatusFound)
		case "/redirect-other":
			http.Redirect(w, r, other.URL+"/", http.StatusTemporaryRedirect)
		case "/offline":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(doc("offline_access.json")))
		case "/malformed":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"resource":`))
		case "/array":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`[]`))
		case "/trailing":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(doc("spec_tutorial.json") + `{}`))
		case "/error":
			http.Error(w, "boom", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	self = srv.URL
	return srv, other
}

func TestFetch(t *testing.T) {
	srv, _ := fixtureServer(t)
	want := loadJSON(t, "full.json")
	want.Resource = srv.URL + "/mcp"
	res := srv.URL + "/mcp"
	mdURL, err := MetadataURL(res)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, url, want string
		wantErr         error
	}{
		{"ok", mdURL, res, nil},
		{"resource mismatch", mdURL, srv.URL, ErrResourceMismatch},
		{"resource trailing slash is a mismatch", mdURL, res + "/", ErrResourceMismatch},
		{"resource case is a mismatch", mdURL, strings.ToUpper(res[:4]) + res[4:], ErrResourceMismatch},
		{"empty want", mdURL, "", ErrInvalidResource},
		{"wrong content type", srv.URL + "/text", res, ErrFetch},
		{"no content type", srv.URL + "/no-type", res, ErrFetch},
		{"404", srv.URL + "/missing", res, ErrFetch},
		{"500", srv.URL + "/error", res, ErrFetch},
		{"oversized body", srv.URL + "/big", res, ErrFetch},
		{"body exactly at cap", srv.URL + "/exactly-max", res, nil},
		{"redirect same origin refused", srv.URL + "/redirect-same", res, ErrFetch},
		{"redirect other origin refused", srv.URL + "/redirect-other", res, ErrFetch},
		{"invalid metadata", srv.URL + "/offline", res, ErrInvalidMetadata},
		{"malformed JSON", srv.URL + "/malformed", res, ErrInvalidMetadata},
		{"JSON array", srv.URL + "/array", res, ErrInvalidMetadata},
		{"trailing data", srv.URL + "/trailing", res, ErrInvalidMetadata},
		{"http non-loopback refused", "http://example.com/.well-known/oauth-protected-resource", "http://example.com", ErrFetch},
		{"metadata URL with fragment", mdURL + "#x", res, ErrFetch},
		{"relative metadata URL", "/.well-known/oauth-protected-resource", res, ErrFetch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Fetch(context.Background(), srv.Client(), tt.url, tt.want)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Fetch() error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if got != nil {
					t.Errorf("Fetch() = %v with error", got)
				}
				return
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("Fetch()\n got %#v\nwant %#v", *got, want)
			}
		})
	}
}

func TestFetchNilClientAndHandlerTogether(t *testing.T) {
	// Serve this package's Handler on a loopback server, then fetch both
	// documents the way an MCP client probes them (RFC 9728 §3.3 pairs).
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	defer srv.Close()
	res := srv.URL + "/mcp"
	var err error
	if h, err = Handler(Metadata{Resource: res, AuthorizationServers: []string{issuer}}); err != nil {
		t.Fatal(err)
	}
	ins, _ := MetadataURL(res)
	root, _ := RootMetadataURL(res)
	if _, err := Fetch(context.Background(), nil, ins, res); err != nil {
		t.Errorf("path-inserted: %v", err)
	}
	if _, err := Fetch(context.Background(), nil, root, srv.URL); err != nil {
		t.Errorf("root with origin: %v", err)
	}
	if _, err := Fetch(context.Background(), nil, root, res); !errors.Is(err, ErrResourceMismatch) {
		t.Errorf("root with full resource: %v, want %v", err, ErrResourceMismatch)
	}
}

func TestFetchDoesNotModifyClient(t *testing.T) {
	srv, _ := fixtureServer(t)
	var called atomic.Bool
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { called.Store(true); return nil }}
	_, err := Fetch(context.Background(), c, srv.URL+"/redirect-same", srv.URL+"/mcp")
	if !errors.Is(err, ErrFetch) {
		t.Errorf("Fetch() error = %v, want %v", err, ErrFetch)
	}
	if called.Load() {
		t.Error("caller's CheckRedirect was used; redirects must be refused")
	}
	if c.CheckRedirect == nil {
		t.Error("caller's client was modified")
	}
}

func TestFetchContextCanceled(t *testing.T) {
	srv, _ := fixtureServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Fetch(ctx, srv.Client(), srv.URL+"/.well-known/oauth-protected-resource/mcp", srv.URL+"/mcp")
	if !errors.Is(err, ErrFetch) || !errors.Is(err, context.Canceled) {
		t.Errorf("Fetch() error = %v, want %v and %v", err, ErrFetch, context.Canceled)
	}
}
