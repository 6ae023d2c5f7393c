package integration

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// oidcHost is integration/node/oidc-host.mjs: panva's oidc-provider on
// 127.0.0.1, controlled over stdin.
type oidcHost struct {
	issuer string
	mu     sync.Mutex
	in     io.Writer
	// lines carries the host's stdout lines, read by one goroutine; it
	// is closed when stdout ends.
	lines  chan string
	proc   *exec.Cmd
	stderr *syncBuf
}

// startOIDCHost starts oidc-host.mjs with args and waits for its issuer.
func startOIDCHost(t *testing.T, node string, args ...string) *oidcHost {
	t.Helper()
	cmd := exec.Command(node, append([]string{"oidc-host.mjs"}, args...)...)
	cmd.Dir = nodeDir
	stderr := &syncBuf{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start oidc-host.mjs: %v", err)
	}
	t.Cleanup(func() {
		in.Close() // the host exits when stdin closes
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("oidc-host.mjs stderr:\n%s", stderr)
		}
	})
	h := &oidcHost{in: in, lines: make(chan string, 1), proc: cmd, stderr: stderr}
	stop := t.Context() // done before the cleanup above stops the host
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case h.lines <- sc.Text():
			case <-stop.Done():
				return
			}
		}
	}()
	var hello struct{ Issuer string }
	line := h.next(t, "its issuer")
	if json.Unmarshal([]byte(line), &hello) != nil || hello.Issuer == "" {
		t.Fatalf("oidc-host.mjs did not start: %q\n%s", line, stderr)
	}
	h.issuer = hello.Issuer
	return h
}

// oidcHostWait bounds the wait for a line of the host: its start (loading
// oidc-provider, a key) and each command take well under a second on an
// idle machine; a host that says nothing for this long is stuck, and the
// test fails with its stderr instead of hanging until the package's
// timeout.
const oidcHostWait = 2 * time.Minute

// next returns the host's next stdout line, failing the test when stdout
// ends or nothing comes within oidcHostWait (the host is killed then).
func (h *oidcHost) next(t *testing.T, what string) string {
	t.Helper()
	timer := time.NewTimer(oidcHostWait)
	defer timer.Stop()
	select {
	case line, ok := <-h.lines:
		if !ok {
			t.Fatalf("oidc-host.mjs ended its output before %s:\n%s", what, h.stderr)
		}
		return line
	case <-timer.C:
		_ = h.proc.Process.Kill()
		t.Fatalf("oidc-host.mjs did not write %s within %v (killed):\n%s", what, oidcHostWait, h.stderr)
		return ""
	}
}

// send sends a command and returns the kid of the current signing key.
func (h *oidcHost) send(t *testing.T, cmd map[string]string) string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	b, _ := json.Marshal(cmd)
	if _, err := h.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("oidc-host.mjs: %v", err)
	}
	var reply struct {
		OK  bool
		Kid string
	}
	line := h.next(t, fmt.Sprintf("its answer to %v", cmd))
	if json.Unmarshal([]byte(line), &reply) != nil || !reply.OK {
		t.Fatalf("oidc-host.mjs %v: %q", cmd, line)
	}
	return reply.Kid
}

// oidcPair is oidc-provider and the example server started with -issuer
// pointing at it.
type oidcPair struct {
	as *oidcHost
	ex *example
}

// startOIDCPair starts oidc-provider (JWT access tokens, or opaque ones
// for mode "introspect") and the example server in front of it, with no
// clock leeway so that expiry is exact.
func startOIDCPair(t *testing.T, node, bin, mode string, hostArgs ...string) *oidcPair {
	t.Helper()
	format := "jwt"
	args := []string{"-leeway=-1s"}
	var env []string
	if mode == "introspect" {
		format = "opaque"
		// oidc-provider's introspection response for a client-credentials
		// token has no "sub" (there is no user), and introspection requires
		// "sub" by default, like the JWT path: the "tokens" subtest uses
		// such tokens, so the pair runs with the named relaxation
		// (docs/providers.md). The user flows below carry a sub anyway.
		args = append(args, "-token-mode", "introspect", "-introspection-client-id", "mcpguard-introspect",
			"-introspection-allow-missing-sub")
		env = append(env, "MCPGUARD_INTROSPECTION_CLIENT_SECRET=introspect-secret")
	}
	as := startOIDCHost(t, node, append([]string{"--format", format}, hostArgs...)...)
	ex := startExample(t, bin, env, append(args, "-issuer", as.issuer)...)
	as.send(t, map[string]string{"cmd": "resource", "url": ex.mcpURL})
	return &oidcPair{as: as, ex: ex}
}

// clientCredentials gets an access token for resource from the machine
// client id (mcpguard-cc, or mcpguard-cc-short for 3-second tokens).
func (p *oidcPair) clientCredentials(t *testing.T, id, resource string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}, "scope": {baseScope}}
	req, _ := http.NewRequest(http.MethodPost, p.as.issuer+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, "cc-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil || resp.StatusCode != 200 || tr.AccessToken == "" {
		t.Fatalf("client_credentials %s: %d %q %v", id, resp.StatusCode, tr.Error, err)
	}
	return tr.AccessToken
}

// register registers a public client (as the TypeScript SDKs do, RFC
// 7591) and returns its client_id.
func (p *oidcPair) register(t *testing.T) string {
	t.Helper()
	body := `{"redirect_uris":["` + driverRedirect + `"],"grant_types":["authorization_code"],"response_types":["code"],` +
		`"token_endpoint_auth_method":"none","application_type":"native"}`
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, p.as.issuer+"/reg", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reg); err != nil || resp.StatusCode != http.StatusCreated || reg.ClientID == "" {
		t.Fatalf("registration: %d %v", resp.StatusCode, err)
	}
	return reg.ClientID
}

// authorize starts an authorization request for clientID and returns the
// status: 303 to the interaction for a known client, 400 invalid_client
// for an unknown one.
func (p *oidcPair) authorize(t *testing.T, clientID string) int {
	t.Helper()
	q := url.Values{"client_id": {clientID}, "response_type": {"code"}, "redirect_uri": {driverRedirect},
		"scope": {baseScope}, "resource": {p.ex.mcpURL}, "code_challenge_method": {"S256"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}}
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, p.as.issuer+"/auth?"+q.Encode(), nil)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode
}

// whoami calls the whoami tool with tok and returns the answer.
func (p *oidcPair) whoami(t *testing.T, tok string) *rawResponse {
	t.Helper()
	return rawPost(testContext(t), t, p.ex.mcpURL, rawRequest{token: tok, revision: rev20260728, method: "tools/call", params: toolCall("whoami", nil)})
}

func (p *oidcPair) metaURL() string {
	u, _ := url.Parse(p.ex.mcpURL)
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + u.Path
}

// jwtKid returns the kid of a JWT's header.
func jwtKid(t *testing.T, tok string) string {
	t.Helper()
	h, _, _ := strings.Cut(tok, ".")
	b, _ := base64.RawURLEncoding.DecodeString(h)
	var hdr struct{ Kid string }
	_ = json.Unmarshal(b, &hdr)
	return hdr.Kid
}

// TestOIDCProvider puts the example server (started with -issuer, as a
// team would) in front of panva's oidc-provider, an OpenID Certified
// authorization server, in JWT mode (RFC 9068 access tokens checked
// against its JWKS) and introspection mode (opaque tokens, RFC 7662). In
// both: the audience comes from the RFC 8707 resource indicator; expired
// tokens and tokens for another resource get the exact 401; the
// TypeScript clients complete the flow, step-up included, with a
// pre-registered client and with dynamic registration. In JWT mode, a key
// rotation is followed. docs/providers.md is the recipe.
func TestOIDCProvider(t *testing.T) {
	node := requireNode(t)
	t.Parallel()
	bin := exampleBinary(t)
	for _, mode := range []string{"jwt", "introspect"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := startOIDCPair(t, node, bin, mode)
			wantToken := http.StatusOK

			t.Run("tokens", func(t *testing.T) {
				t.Parallel()
				good := p.clientCredentials(t, "mcpguard-cc", p.ex.mcpURL)
				if r := p.whoami(t, good); r.status != wantToken || !strings.Contains(string(r.body), `\"tenant\":\"tenant-a\"`) {
					t.Errorf("token for the resource: %d %s", r.status, r.body)
				}
				other := p.clientCredentials(t, "mcpguard-cc", "https://other.example.com/mcp")
				if r := p.whoami(t, other); r.status != http.StatusUnauthorized || len(r.wwwAuth) != 1 || r.wwwAuth[0] != invalidToken(p.metaURL()) {
					t.Errorf("token for another resource: %d %q, want 401 %q", r.status, r.wwwAuth, invalidToken(p.metaURL()))
				}
				short := p.clientCredentials(t, "mcpguard-cc-short", p.ex.mcpURL)
				// exp is 3 s after issuance, in whole seconds rounded down
				// (oidc-provider's iat): before expBound, whatever the load.
				expBound := time.Now().Add(3 * time.Second)
				if r := p.whoami(t, short); r.status != http.StatusOK {
					t.Errorf("3-second token, at once: %d %q", r.status, r.wwwAuth)
				}
				// The server has no leeway, and must not serve the earlier
				// (cached) validation past exp. Both processes read this
				// machine's clock: once it is past expBound, so is exp.
				time.Sleep(time.Until(expBound) + 100*time.Millisecond)
				if r := p.whoami(t, short); r.status != http.StatusUnauthorized || len(r.wwwAuth) != 1 || r.wwwAuth[0] != invalidToken(p.metaURL()) {
					t.Errorf("expired token: %d %q, want 401 %q", r.status, r.wwwAuth, invalidToken(p.metaURL()))
				}
				if mode != "jwt" {
					return
				}
				// Key rotation: the provider signs with a new key and still
				// publishes the old one; the server fetches the new key on
				// the unknown kid.
				// The rotation replaces the Provider, not its storage: a
				// client registered before it (as the TypeScript flows in
				// the parallel subtests are) may still authorize after it.
				oldKid := jwtKid(t, good)
				registered := p.register(t)
				if got := p.authorize(t, registered); got != http.StatusSeeOther {
					t.Fatalf("authorization of a registered client before rotation: %d, want 303", got)
				}
				newKid := p.as.send(t, map[string]string{"cmd": "rotate"})
				if got := p.authorize(t, registered); got != http.StatusSeeOther {
					t.Errorf("authorization of a client registered before the rotation: %d, want 303 (the rotation lost the registration)", got)
				}
				rotated := p.clientCredentials(t, "mcpguard-cc", p.ex.mcpURL)
				if got := jwtKid(t, rotated); got != newKid || got == oldKid {
					t.Fatalf("after rotation kid = %q, want the new %q (old %q)", got, newKid, oldKid)
				}
				if r := p.whoami(t, rotated); r.status != http.StatusOK {
					t.Errorf("token signed with the new key: %d %q %s", r.status, r.wwwAuth, r.body)
				}
				if r := p.whoami(t, good); r.status != http.StatusOK {
					t.Errorf("token signed with the old, still published key: %d %q", r.status, r.wwwAuth)
				}
			})
			for _, c := range []tsClient{{"v1", rev20251125}, {"v2", rev20260728}} {
				for _, reg := range []string{"preregistered", "dcr"} {
					t.Run("ts/"+c.sdk+"/"+c.revision+"/"+reg, func(t *testing.T) {
						t.Parallel()
						ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
						defer cancel()
						args := []string{"--sdk", c.sdk, "--revision", c.revision, "--url", p.ex.mcpURL}
						w := flowWant{mcpURL: p.ex.mcpURL, issuer: p.as.issuer, registration: reg, revision: c.revision,
							subject: "dev-user", opaque: mode == "introspect", registeredScope: "mcp:tools notes:read notes:write"}
						if reg == "preregistered" {
							args = append(args, "--client-id", "mcpguard-ts")
							w.clientID = "mcpguard-ts"
						}
						checkFlow(t, runDriver(ctx, t, node, args...), w)
					})
				}
			}
		})
	}
	// Without the MCP setting, oidc-provider holds a dynamically
	// registered client to the scope it registered (the first challenge's)
	// and refuses its step-up: the reason for the setting.
	t.Run("jwt/default-scope-ceiling", func(t *testing.T) {
		t.Parallel()
		p := startOIDCPair(t, node, bin, "jwt", "--scope-ceiling")
		ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
		defer cancel()
		r := runDriver(ctx, t, node, "--sdk", "v1", "--url", p.ex.mcpURL)
		if r.OK || len(r.Authorizations) != 2 || !strings.Contains(r.Error, "invalid_scope") || r.NotesWrite != nil {
			t.Errorf("step-up with the default registered-scope ceiling: ok %v, error %q, authorizations %+v", r.OK, r.Error, r.Authorizations)
		}
	})
}
