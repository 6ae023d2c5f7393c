package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/prm"
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
			b, err := os.ReadFile(filepath.Join("..", "prm", "testdata", name))
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
			pad := strings.Repeat(" ", fetch.MaxResourceMetadataBytes)
			_, _ = w.Write([]byte(pad + doc("full.json")))
		case "/exactly-max":
			w.Header().Set("Content-Type", "application/json")
			d := doc("full.json")
			_, _ = w.Write([]byte(d + strings.Repeat(" ", fetch.MaxResourceMetadataBytes-len(d))))
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
		case "/duplicate":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"resource":"` + self + `/mcp","authorization_servers":["https://auth.example.com"],"resource":"https://evil.example/mcp"}`))
		case "/case-variant":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"RESOURCE":"https://evil.example/mcp","resource":"` + self + `/mcp","authorization_servers":["https://auth.example.com"]}`))
		case "/lone-surrogate":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"resource":"` + self + `/mcp","authorization_servers":["https://auth.example.com"],"resource_name":"\udc00"}`))
		case "/bad-utf8":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("{\"resource\":\"" + self + "/mcp\",\"authorization_servers\":[\"https://auth.example.com\"],\"resource_name\":\"\xff\"}"))
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

func TestFetchMetadata(t *testing.T) {
	srv, _ := fixtureServer(t)
	want := loadJSON(t, "full.json")
	want.Resource = srv.URL + "/mcp"
	res := srv.URL + "/mcp"
	mdURL, err := prm.MetadataURL(res)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, url, want string
		wantErr         error
	}{
		{"ok", mdURL, res, nil},
		{"resource mismatch", mdURL, srv.URL, prm.ErrResourceMismatch},
		{"resource trailing slash is a mismatch", mdURL, res + "/", prm.ErrResourceMismatch},
		{"resource case is a mismatch", mdURL, strings.ToUpper(res[:4]) + res[4:], prm.ErrResourceMismatch},
		{"empty want", mdURL, "", prm.ErrInvalidResource},
		{"wrong content type", srv.URL + "/text", res, errMetadataFetch},
		{"no content type", srv.URL + "/no-type", res, errMetadataFetch},
		{"404", srv.URL + "/missing", res, errMetadataFetch},
		{"500", srv.URL + "/error", res, errMetadataFetch},
		{"oversized body", srv.URL + "/big", res, errMetadataFetch},
		{"body exactly at cap", srv.URL + "/exactly-max", res, nil},
		{"redirect same origin refused", srv.URL + "/redirect-same", res, errMetadataFetch},
		{"redirect other origin refused", srv.URL + "/redirect-other", res, errMetadataFetch},
		{"offline_access in scopes_supported accepted", srv.URL + "/offline", res, nil},
		{"malformed JSON", srv.URL + "/malformed", res, prm.ErrInvalidMetadata},
		{"JSON array", srv.URL + "/array", res, prm.ErrInvalidMetadata},
		{"trailing data", srv.URL + "/trailing", res, prm.ErrInvalidMetadata},
		{"repeated member name", srv.URL + "/duplicate", res, prm.ErrInvalidMetadata},
		{"invalid UTF-8", srv.URL + "/bad-utf8", res, prm.ErrInvalidMetadata},
		{"case variant of resource", srv.URL + "/case-variant", res, prm.ErrInvalidMetadata},
		{"lone surrogate", srv.URL + "/lone-surrogate", res, prm.ErrInvalidMetadata},
		{"http non-loopback refused", "http://example.com/.well-known/oauth-protected-resource", "http://example.com", errMetadataFetch},
		{"metadata URL with fragment", mdURL + "#x", res, errMetadataFetch},
		{"relative metadata URL", "/.well-known/oauth-protected-resource", res, errMetadataFetch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FetchMetadata(context.Background(), srv.Client(), tt.url, tt.want)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("FetchMetadata() error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if got != nil {
					t.Errorf("FetchMetadata() = %v with error", got)
				}
				return
			}
			if tt.url == mdURL && !reflect.DeepEqual(*got, want) {
				t.Errorf("FetchMetadata()\n got %#v\nwant %#v", *got, want)
			}
		})
	}
}

func TestFetchMetadataNilClientAndHandlerTogether(t *testing.T) {
	// Serve this package's Handler on a loopback server, then fetch both
	// documents the way an MCP client probes them (RFC 9728 §3.3 pairs).
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	defer srv.Close()
	res := srv.URL + "/mcp"
	var err error
	if h, err = prm.Handler(prm.Metadata{Resource: res, AuthorizationServers: []string{"https://auth.example.com"}}); err != nil {
		t.Fatal(err)
	}
	ins, _ := prm.MetadataURL(res)
	root, _ := prm.MetadataURL(srv.URL)
	if _, err := FetchMetadata(context.Background(), nil, ins, res); err != nil {
		t.Errorf("path-inserted: %v", err)
	}
	if _, err := FetchMetadata(context.Background(), nil, root, srv.URL); err != nil {
		t.Errorf("root with origin: %v", err)
	}
	if _, err := FetchMetadata(context.Background(), nil, root, res); !errors.Is(err, prm.ErrResourceMismatch) {
		t.Errorf("root with full resource: %v, want %v", err, prm.ErrResourceMismatch)
	}
}

func TestFetchMetadataDoesNotModifyClient(t *testing.T) {
	srv, _ := fixtureServer(t)
	var called atomic.Bool
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { called.Store(true); return nil }}
	_, err := FetchMetadata(context.Background(), c, srv.URL+"/redirect-same", srv.URL+"/mcp")
	if !errors.Is(err, errMetadataFetch) {
		t.Errorf("FetchMetadata() error = %v, want %v", err, errMetadataFetch)
	}
	if called.Load() {
		t.Error("caller's CheckRedirect was used; redirects must be refused")
	}
	if c.CheckRedirect == nil {
		t.Error("caller's client was modified")
	}
}

func TestFetchMetadataContextCanceled(t *testing.T) {
	srv, _ := fixtureServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := FetchMetadata(ctx, srv.Client(), srv.URL+"/.well-known/oauth-protected-resource/mcp", srv.URL+"/mcp")
	if !errors.Is(err, errMetadataFetch) || !errors.Is(err, context.Canceled) {
		t.Errorf("FetchMetadata() error = %v, want %v and %v", err, errMetadataFetch, context.Canceled)
	}
}

// loadJSON reads a prm testdata document.
func loadJSON(t *testing.T, name string) prm.Metadata {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "prm", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var m prm.Metadata
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
