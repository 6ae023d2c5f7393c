package middleware

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"
)

// TestGorillaMux: router.Use(m.Handler) on the MCP subtree, the metadata
// outside it, and a subrouter with RequireScopes. Served over a loopback
// httptest server.
func TestGorillaMux(t *testing.T) {
	f := newFixture(t, nil)
	root := mux.NewRouter()
	ins, rootPath := f.m.MetadataPaths()
	root.Handle(ins, f.m.MetadataHandler())
	root.Handle(rootPath, f.m.MetadataHandler())
	api := root.PathPrefix("/mcp").Subrouter()
	api.Use(f.m.Handler)
	api.Handle("", echoHandler())
	admin := api.PathPrefix("/admin").Subrouter()
	admin.Use(f.m.RequireScopes("admin:write"))
	admin.Handle("/reset", echoHandler())
	srv := httptest.NewServer(root)
	defer srv.Close()
	testRouter(t, f, srv)
}

// TestServeMux: the same with plain net/http.
func TestServeMux(t *testing.T) {
	f := newFixture(t, nil)
	mx := http.NewServeMux()
	ins, rootPath := f.m.MetadataPaths()
	mx.Handle(ins, f.m.MetadataHandler())
	mx.Handle(rootPath, f.m.MetadataHandler())
	mx.Handle("/mcp", f.m.Handler(echoHandler()))
	mx.Handle("/mcp/admin/reset", f.m.Handler(f.m.RequireScopes("admin:write")(echoHandler())))
	srv := httptest.NewServer(mx)
	defer srv.Close()
	testRouter(t, f, srv)
}

func testRouter(t *testing.T, f *fixture, srv *httptest.Server) {
	t.Helper()
	ins, _ := f.m.MetadataPaths()
	tests := []struct {
		name       string
		method     string
		path       string
		rev        string
		scopes     []string // nil: no token
		wantStatus int
		wantHeader string
	}{
		{name: "metadata without token", method: "GET", path: ins, wantStatus: 200},
		{name: "mcp without token", method: "GET", path: "/mcp", wantStatus: 401,
			wantHeader: `Bearer scope="mcp", resource_metadata="` + metadataURL + `"`},
		{name: "mcp ok", method: "POST", path: "/mcp", rev: modernRev, scopes: []string{"mcp", "tools:read"}, wantStatus: 200},
		{name: "mcp insufficient", method: "POST", path: "/mcp", rev: modernRev, scopes: []string{"mcp"}, wantStatus: 403,
			wantHeader: `Bearer error="insufficient_scope", scope="mcp tools:read", resource_metadata="` + metadataURL + `", error_description="The operation requires additional scope"`},
		{name: "admin ok", method: "POST", path: "/mcp/admin/reset", rev: modernRev, scopes: []string{"mcp", "tools:read", "admin:write"}, wantStatus: 200},
		{name: "admin step-up modern lists operation and route scopes", method: "POST", path: "/mcp/admin/reset", rev: modernRev, scopes: []string{"mcp", "tools:read"}, wantStatus: 403,
			wantHeader: `Bearer error="insufficient_scope", scope="mcp tools:read admin:write", resource_metadata="` + metadataURL + `", error_description="The operation requires additional scope"`},
		{name: "admin step-up legacy adds granted", method: "POST", path: "/mcp/admin/reset", rev: legacyRev, scopes: []string{"mcp", "tools:read", "extra"}, wantStatus: 403,
			wantHeader: `Bearer error="insufficient_scope", scope="mcp tools:read admin:write extra", resource_metadata="` + metadataURL + `", error_description="The operation requires additional scope"`},
		{name: "admin GET needs base and route", method: "GET", path: "/mcp/admin/reset", scopes: []string{"mcp"}, wantStatus: 403,
			wantHeader: `Bearer error="insufficient_scope", scope="mcp admin:write", resource_metadata="` + metadataURL + `", error_description="The operation requires additional scope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.method == "POST" {
				body = strings.NewReader(rpcBody(tt.rev, "tools/list", ""))
			}
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.rev != "" {
				req.Header.Set("MCP-Protocol-Version", tt.rev)
				if tt.rev == modernRev {
					req.Header.Set("Mcp-Method", "tools/list")
				}
			}
			if tt.scopes != nil {
				req.Header.Set("Authorization", "Bearer "+f.token(t, tt.scopes...))
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status = %d, want %d (%s)", resp.StatusCode, tt.wantStatus, b)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tt.wantHeader {
				t.Errorf("WWW-Authenticate =\n %s\nwant\n %s", got, tt.wantHeader)
			}
		})
	}
}

// TestRequireScopesWithoutHandler: RequireScopes alone has no principal and
// answers 401.
func TestRequireScopesWithoutHandler(t *testing.T) {
	m := newFake(t, fakeValidator{claims: fakeClaims()}, nil)
	rec := httptest.NewRecorder()
	m.RequireScopes("a")(echoHandler()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, resource, nil))
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("status = %d, want 401", rec.Code)
	}
}

func TestRequireScopesPanics(t *testing.T) {
	m := newFake(t, fakeValidator{claims: fakeClaims()}, nil)
	for _, s := range []string{"", "a b", "offline_access"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RequireScopes(%q) did not panic", s)
				}
			}()
			m.RequireScopes(s)
		}()
	}
}

// TestHostSpoofing: Host, X-Forwarded-* and Forwarded never change the
// resource_metadata URL.
func TestHostSpoofing(t *testing.T) {
	m := newFake(t, fakeValidator{claims: fakeClaims()}, nil)
	want := `Bearer scope="mcp", resource_metadata="` + metadataURL + `"`
	for _, h := range [][2]string{
		{"Host", "evil.example"},
		{"X-Forwarded-Host", "evil.example"},
		{"X-Forwarded-Proto", "http"},
		{"X-Forwarded-Prefix", "/evil"},
		{"Forwarded", "host=evil.example;proto=http"},
	} {
		r := httptest.NewRequest(http.MethodGet, "http://evil.example:8080/other/path", nil)
		r.Header.Set(h[0], h[1])
		if h[0] == "Host" {
			r.Host = h[1]
		}
		rec := httptest.NewRecorder()
		m.Handler(echoHandler()).ServeHTTP(rec, r)
		if got := rec.Header().Get("WWW-Authenticate"); got != want {
			t.Errorf("%s: WWW-Authenticate = %s, want %s", h[0], got, want)
		}
	}
}

// TestBodyIdentical: the next handler reads exactly the bytes the client
// sent, with a consistent ContentLength, and the caller's request is left
// alone.
func TestBodyIdentical(t *testing.T) {
	m := newFake(t, fakeValidator{claims: fakeClaims("mcp")}, nil)
	bodies := []string{
		rpcBody(legacyRev, "tools/call", "get_weather"),
		"  \n{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"tools\\/call\",\"params\":{\"name\":\"caf\\u00e9 世界\",\"arguments\":{\"x\":[1,2,{\"y\":\"}]\"}]}}}\r\n",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"blob":"` + strings.Repeat("x", 200000) + `"}}}`,
	}
	for i, body := range bodies {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/chunked=%t", i, chunked), func(t *testing.T) {
				r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(body))
				r.Header.Set("Authorization", "Bearer x")
				if chunked {
					r.ContentLength = -1
					r.TransferEncoding = []string{"chunked"}
				}
				origBody, origCtx := r.Body, r.Context()
				var got []byte
				var gotLen int64
				var gotTE []string
				next := http.HandlerFunc(func(w http.ResponseWriter, r2 *http.Request) {
					if r2 == r {
						t.Error("next got the caller's *Request, want a copy")
					}
					got, _ = io.ReadAll(r2.Body)
					_ = r2.Body.Close()
					gotLen, gotTE = r2.ContentLength, r2.TransferEncoding
				})
				rec := httptest.NewRecorder()
				m.Handler(next).ServeHTTP(rec, r)
				if rec.Code != http.StatusOK {
					t.Fatalf("status = %d (%s)", rec.Code, rec.Body)
				}
				if sha256.Sum256(got) != sha256.Sum256([]byte(body)) || !bytes.Equal(got, []byte(body)) {
					g, w := sha256.Sum256(got), sha256.Sum256([]byte(body))
					t.Fatalf("body differs downstream: sha256 %s, want %s", hex.EncodeToString(g[:]), hex.EncodeToString(w[:]))
				}
				if gotLen != int64(len(body)) || gotTE != nil {
					t.Errorf("ContentLength, TransferEncoding = %d, %v; want %d, nil", gotLen, gotTE, len(body))
				}
				if r.Body != origBody || r.Context() != origCtx {
					t.Error("caller's request was modified")
				}
				if chunked && (r.ContentLength != -1 || len(r.TransferEncoding) != 1) {
					t.Error("caller's ContentLength or TransferEncoding was modified")
				}
			})
		}
	}
}

// TestNoBodyReadBeforeAuth: an unauthenticated POST's body is not read.
func TestNoBodyReadBeforeAuth(t *testing.T) {
	m := newFake(t, fakeValidator{claims: fakeClaims("mcp")}, nil)
	for _, auth := range []string{"", "Basic x", "Bearer a b"} {
		cr := &countingReader{r: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)}
		r := httptest.NewRequest(http.MethodPost, resource, cr)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		m.Handler(echoHandler()).ServeHTTP(httptest.NewRecorder(), r)
		if cr.n != 0 {
			t.Errorf("auth %q: %d body bytes read before authentication", auth, cr.n)
		}
	}
	m = newFake(t, fakeValidator{err: errString("bad")}, nil)
	cr := &countingReader{r: strings.NewReader(`{}`)}
	r := httptest.NewRequest(http.MethodPost, resource, cr)
	r.Header.Set("Authorization", "Bearer x")
	m.Handler(echoHandler()).ServeHTTP(httptest.NewRecorder(), r)
	if cr.n != 0 {
		t.Errorf("invalid token: %d body bytes read", cr.n)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

type errString string

func (e errString) Error() string { return string(e) }

// TestMcpNameOWS: leading and trailing white space around Mcp-Name is not
// part of the value (RFC 9110 §5.5); net/http's server trims it, as the MCP
// conformance suite expects.
func TestMcpNameOWS(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.m.Handler(echoHandler()))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(rpcBody(modernRev, "tools/call", "get_weather")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("MCP-Protocol-Version", modernRev)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", " \t get_weather \t ")
	req.Header.Set("Authorization", "Bearer "+f.token(t, "mcp", "tools:call", "weather:read"))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
}
