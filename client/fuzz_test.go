package client

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/challenge"
)

var fuzzSeeds = []struct {
	status int
	h1, h2 string
}{
	{401, `Bearer resource_metadata="{prm}", scope="files:read"`, ""},
	{403, `Bearer error="insufficient_scope", scope="files:write", resource_metadata="{prm}", error_description="File write permission required for this operation"`, ""},
	{403, `Bearer error="insufficient_scope", scope="s{n}", resource_metadata="{prm}"`, ""},
	{403, `Bearer error="insufficient_scope", scope="files:read files:write user:profile", resource_metadata="{prm}"`, ""},
	{401, `Bearer error="invalid_token"`, `DPoP algs="ES256"`},
	{401, `Basic realm="x", Bearer realm="y", scope="a b"`, `Bearer scope="c"`},
	{403, `Bearer error="insufficient_scope", scope="offline_access"`, ""},
	{401, `Bearer resource_metadata="https://evil.example/x"`, ""},
	{401, `Bearer scope="a`, ""},
	{401, `Bearer ,,, scope=a, scope=b`, ""},
	{403, "Bearer error=insufficient_scope, scope=\"\x00\r\n\"", ""},
	{200, `Bearer`, ""},
}

// FuzzDecide: arbitrary statuses and WWW-Authenticate values never panic,
// and only Bearer challenges with the matching status and error are acted
// on.
func FuzzDecide(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s.status, s.h1, s.h2)
	}
	f.Fuzz(func(t *testing.T, status int, h1, h2 string) {
		if c, _, ok := decide(status, []string{h1, h2}, true); ok && c.Scheme != "Bearer" && !strings.EqualFold(c.Scheme, "DPoP") {
			t.Fatalf("acted on %+v with DPoP", c)
		}
		c, reason, ok := decide(status, []string{h1, h2}, false)
		if !ok {
			return
		}
		if c.Scheme != "Bearer" || len(c.Scope) > maxChallengeScopes {
			t.Fatalf("acted on %+v", c)
		}
		switch {
		case status == 401 && reason == reasonUnauthorized && (c.Error == "" || c.Error == challenge.InvalidToken):
		case status == 403 && reason == reasonInsufficientScope && c.Error == challenge.InsufficientScope:
		default:
			t.Fatalf("status %d, reason %q, error %q", status, reason, c.Error)
		}
	})
}

// FuzzRoundTrip runs the whole transport against an in-memory server that
// answers every request with the fuzzed status and WWW-Authenticate values
// ("{prm}" becomes the metadata URL, "{n}" the request number). RoundTrip
// must not panic and must stay within its bounds.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s.status, s.h1, s.h2)
	}
	const resource = "http://127.0.0.1:1/mcp"
	const prmURL = "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp"
	mdClient := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{
			StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Request: r,
			Body: io.NopCloser(strings.NewReader(metadataJSON(resource, "files:read"))),
		}, nil
	})}
	f.Fuzz(func(t *testing.T, status int, h1, h2 string) {
		if status < 100 || status > 999 {
			status = 401
		}
		var sends, auths atomic.Int32
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n := strconv.Itoa(int(sends.Add(1)))
			h := http.Header{}
			for _, v := range []string{h1, h2} {
				if v != "" {
					h.Add("WWW-Authenticate", strings.NewReplacer("{prm}", prmURL, "{n}", n).Replace(v))
				}
			}
			return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: r}, nil
		})
		authz := AuthorizerFunc(func(_ context.Context, req AuthorizeRequest) (oauth2.TokenSource, error) {
			auths.Add(1)
			return staticToken(req.Scopes...), nil
		})
		// A cross-origin resource_metadata is fetched with mdClient too: a
		// fuzzed URL must never reach the network.
		tr, err := New(Config{Resource: resource, Authorizer: authz, Base: base, HTTPClient: mdClient,
			CrossOriginHTTPClient: mdClient, TokenSource: staticToken("a")})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, resource, strings.NewReader("{}"))
		resp, err := tr.RoundTrip(req)
		if (resp == nil) == (err == nil) {
			t.Fatalf("resp %v, err %v", resp, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
		if a := auths.Load(); a > defaultMaxRetries {
			t.Fatalf("%d authorizations, max %d", a, defaultMaxRetries)
		}
		if s := sends.Load(); s > 2*defaultMaxRetries+1 {
			t.Fatalf("%d requests, max %d", s, 2*defaultMaxRetries+1)
		}
	})
}
