package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// httpTrace is an http.RoundTripper that records each request's method,
// URL, status and WWW-Authenticate.
type httpTrace struct {
	mu    sync.Mutex
	lines []string
}

func (r *httpTrace) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.lines = append(r.lines, fmt.Sprintf("%s %s %d %s", req.Method, req.URL, resp.StatusCode, resp.Header.Get("WWW-Authenticate")))
		r.mu.Unlock()
	}
	return resp, err
}

func (r *httpTrace) first() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lines) == 0 {
		return ""
	}
	return r.lines[0]
}

func (r *httpTrace) has(prefix string) bool { return r.index(prefix) >= 0 }

// index returns the index of the first request line starting with prefix,
// or -1.
func (r *httpTrace) index(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, l := range r.lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

// TestMCPGoClient runs mark3labs/mcp-go's OAuth client (v1.2.1) through
// the flow against the example binary, for both revisions it speaks.
//
// What mcp-go does, asserted here: on a 401 it returns
// OAuthAuthorizationRequiredError and leaves the flow to the application
// (RegisterClient with OAuthConfig.Scopes, GetAuthorizationURL with PKCE
// S256 and resource, ProcessAuthorizationResponse). It has no Client ID
// Metadata Document support (it always registers dynamically). On a 403
// insufficient_scope it does nothing: it reads the body
// ({"error":"insufficient_scope"}) as a JSON-RPC error, so the call fails
// with "internal error: insufficient_scope" (wrapping mcp.ErrInternalError;
// the challenge and its scope are not exposed), and no re-authorization
// starts. It sends no request without a token, so it never sees the 401
// challenge: it finds the metadata at the path-inserted well-known URL. Step-up is the application's job: authorize
// again with the scope it needs (here from the same registration, which
// devas allows although it registered only mcp:tools).
func TestMCPGoClient(t *testing.T) {
	t.Parallel()
	ex := startExample(t, exampleBinary(t), nil)
	for _, rev := range []string{rev20251125, rev20260728} {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			rec := &httpTrace{}
			hc := &http.Client{Transport: rec}
			u, _ := url.Parse(ex.mcpURL)
			metaURL := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + u.Path
			var steps []string
			step := func(name string, ok bool, format string, args ...any) {
				t.Helper()
				mark := "ok"
				if !ok {
					mark = "FAIL"
					t.Errorf("%s: "+format, append([]any{name}, args...)...)
				}
				steps = append(steps, name+" "+mark)
			}

			// newClient connects an mcp-go client with scopes and clientID
			// ("" registers dynamically), running the authorization when
			// the server asks for it. It returns the client and its handler.
			newClient := func(scopes []string, clientID string) (*mcpgo.Client, *transport.OAuthHandler) {
				t.Helper()
				cfg := mcpgo.OAuthConfig{
					ClientID: clientID, RedirectURI: redirectURI, Scopes: scopes,
					TokenStore: mcpgo.NewMemoryTokenStore(), PKCEEnabled: true, HTTPClient: hc,
				}
				c, err := mcpgo.NewOAuthStreamableHttpClient(ex.mcpURL, cfg, transport.WithHTTPBasicClient(hc))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				if err := c.Start(ctx); err != nil {
					t.Fatal(err)
				}
				c = mcpgo.NewClient(c.GetTransport(), mcpgo.WithProtocolVersion(rev))
				init := mcp.InitializeRequest{}
				init.Params.ClientInfo = mcp.Implementation{Name: "mcpguard-mcp-go", Version: "0"}
				_, err = c.Initialize(ctx, init)
				if !mcpgo.IsOAuthAuthorizationRequiredError(err) {
					t.Fatalf("Initialize without a token = %v, want OAuthAuthorizationRequiredError", err)
				}
				h := mcpgo.GetOAuthHandler(err)
				if clientID == "" {
					if err := h.RegisterClient(ctx, "mcpguard mcp-go client"); err != nil {
						t.Fatalf("RegisterClient: %v", err)
					}
				}
				verifier, _ := mcpgo.GenerateCodeVerifier()
				state, _ := mcpgo.GenerateState()
				authURL, err := h.GetAuthorizationURL(ctx, state, mcpgo.GenerateCodeChallenge(verifier))
				if err != nil {
					t.Fatalf("GetAuthorizationURL: %v", err)
				}
				q, _ := url.Parse(authURL)
				aq := q.Query()
				step("authorize (PKCE S256, resource) "+strings.Join(scopes, "+"), aq.Get("code_challenge_method") == "S256" && aq.Get("code_challenge") != "" &&
					aq.Get("resource") == ex.mcpURL && aq.Get("scope") == strings.Join(scopes, " "), "%s", authURL)
				got, err := followAuthorize(ctx, authURL, "")
				if err != nil {
					t.Fatalf("authorize: %v", err)
				}
				if err := h.ProcessAuthorizationResponse(ctx, got.Get("code"), got.Get("state"), verifier); err != nil {
					t.Fatalf("ProcessAuthorizationResponse: %v", err)
				}
				if _, err := c.Initialize(ctx, init); err != nil {
					t.Fatalf("Initialize with a token: %v", err)
				}
				return c, h
			}

			c, h := newClient([]string{baseScope}, "")
			// mcp-go sends no request without a token: its handler reports
			// OAuthAuthorizationRequiredError at once, and it finds the
			// metadata at the path-inserted well-known URL (RFC 9728 §3.1)
			// rather than through a 401 challenge.
			step("no tokenless request (no 401)", rec.index("POST "+ex.mcpURL) > rec.index("POST "+ex.issuer+"/token 200") && strings.HasPrefix(rec.first(), "GET "+metaURL+" 200"), "%v", rec.lines)
			step("PRM", rec.has("GET "+metaURL+" 200"), "%v", rec.lines)
			step("AS metadata", rec.has("GET "+ex.issuer+"/.well-known/oauth-authorization-server 200"), "%v", rec.lines)
			step("registration dcr", rec.has("POST "+ex.issuer+"/register 201") && h.GetClientID() != "", "%v", rec.lines)
			step("token", rec.has("POST "+ex.issuer+"/token 200"), "%v", rec.lines)
			step("revision", c.ProtocolVersion() == rev, "negotiated %q", c.ProtocolVersion())

			tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			// Annotated (the example's default): every tool, with the
			// scopes it needs in _meta.securitySchemes.
			step("tools/list", err == nil && slices.Equal(mcpgoToolNames(tools), annotatedTools), "%v %v", err, mcpgoToolNames(tools))
			who, err := c.CallTool(ctx, mcpgoCall("whoami", nil))
			step("whoami", err == nil && strings.Contains(mcpgoText(who), `"subject":"dev-user"`), "%v %s", err, mcpgoText(who))

			_, err = c.CallTool(ctx, mcpgoCall("notes_write", map[string]any{"text": "from mcp-go"}))
			want403 := fmt.Sprintf(`POST %s 403 Bearer error="insufficient_scope", scope="%s notes:write", resource_metadata="%s", error_description="The operation requires additional scope"`, ex.mcpURL, baseScope, metaURL)
			step("notes_write 403", err != nil && rec.has(want403) && errors.Is(err, mcp.ErrInternalError) &&
				err.Error() == "internal error: insufficient_scope" && !mcpgo.IsOAuthAuthorizationRequiredError(err), "error %T %v; trace %v", err, err, rec.lines)

			// Step-up by the application: the same registration, the scope
			// of the challenge.
			c2, _ := newClient([]string{baseScope, "notes:write"}, h.GetClientID())
			res, err := c2.CallTool(ctx, mcpgoCall("notes_write", map[string]any{"text": "from mcp-go"}))
			step("step-up, notes_write", err == nil && !res.IsError && strings.Contains(mcpgoText(res), "from mcp-go"), "%v %s", err, mcpgoText(res))
			t.Logf("| mcp-go v1.2.1 | %s | dcr | %s |", rev, strings.Join(steps, " | "))
		})
	}
}

func mcpgoCall(name string, args map[string]any) mcp.CallToolRequest {
	r := mcp.CallToolRequest{}
	r.Params.Name = name
	r.Params.Arguments = args
	return r
}

func mcpgoText(r *mcp.CallToolResult) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// mcpgoToolNames returns the tools of res as "name=type[scopes]", sorted.
func mcpgoToolNames(res *mcp.ListToolsResult) []string {
	if res == nil {
		return nil
	}
	var names []string
	for _, tool := range res.Tools {
		n := tool.Name
		if tool.Meta != nil {
			b, _ := json.Marshal(tool.Meta.AdditionalFields["securitySchemes"])
			var schemes []struct {
				Type   string   `json:"type"`
				Scopes []string `json:"scopes"`
			}
			_ = json.Unmarshal(b, &schemes)
			for _, s := range schemes {
				n += "=" + s.Type + fmt.Sprint(s.Scopes)
			}
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
