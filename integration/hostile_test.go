package integration

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// hxCase is one hostile request against the example server.
type hxCase struct {
	class, name string
	// req builds the request at run time (after the clock has moved), so
	// that time-relative tokens are exact. Its note text defaults to
	// "class/name".
	req  func(t *testing.T) hxReq
	want hxWant
	// wantErr, if set, is the validate sentinel the token itself must
	// fail with when given straight to the validator after the request,
	// so that a case cannot pass for the wrong reason (the middleware
	// maps every token failure to the same 401).
	wantErr error
	// proxied, if set, is the answer through mcpguard proxy where it
	// differs from the example server's, with the reason beside it.
	proxied *hxWant
	// fetches is the exact number of JWKS fetches the request must cause:
	// 1 when the token reaches the key source with an unknown kid (one
	// on-demand refresh) or with a known kid whose signature fails (one
	// Refresh, for authorization servers that re-key under an unchanged
	// kid); 0 when it is refused before key selection.
	fetches int64
}

// Keys the hostile suite publishes in the issuer's JWKS before the key
// source's first fetch, besides the issuer's own ("es256-1", …).
const (
	hxKIDES256   = "hx-es256"     // ES256, "alg":"ES256": signs hand-assembled tokens
	hxKIDRS256   = "hx-rs256"     // RSA 2048, "alg":"RS256"
	hxKIDRSANone = "hx-rsa-noalg" // the same RSA key without "alg"
	hxKIDEnc     = "hx-enc"       // ES256 with "use":"enc": must be dropped
	hxKIDWeak    = "hx-rsa1024"   // RSA 1024: must be dropped
	hxKIDDup     = "hx-dup"       // two ES256 keys share this kid
)

// hxHostile is what the hostile cases are built from: the environment,
// the signers and extra keys TestHostileTokens publishes, the expected
// answers, and helpers that assemble tokens and requests. The hx*Cases
// functions (hostile_extraction_test.go, hostile_tokens_test.go,
// hostile_claims_test.go) each return the cases of one attack class, in
// the order TestHostileTokens runs them; each binds the fields and helpers
// it uses to locals of the same names, so every case reads alike.
type hxHostile struct {
	e   *hxEnv
	att *hxAttacker
	ctx context.Context

	es, rs, attacker                        hxSigner
	encKey, weakKey, dup1, dup2, foreignDup jose.JSONWebKey

	ok, invalid, noTok, malformed, multiple, inQuery, insufficient hxWant
}

// hdr is the header of a hand-assembled token: a valid at+jwt ES256
// header under hx-es256, with extra members set (nil deletes).
func (fx *hxHostile) hdr(extra map[string]any) map[string]any {
	h := map[string]any{"alg": "ES256", "typ": "at+jwt", "kid": hxKIDES256}
	for k, v := range extra {
		if v == nil {
			delete(h, k)
		} else {
			h[k] = v
		}
	}
	return h
}

// claims returns valid claims with changes applied (nil deletes).
func (fx *hxHostile) claims(changes map[string]any) map[string]any {
	c := fx.e.claims()
	for k, v := range changes {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// signed signs header and claims (any JSON values) with signer.
func (fx *hxHostile) signed(t *testing.T, s hxSigner, alg string, header, payload any) string {
	raw := func(v any) []byte {
		if b, ok := v.([]byte); ok {
			return b
		}
		return hxJSON(t, v)
	}
	return s.sign(t, alg, raw(header), raw(payload))
}

// bearer is a request with tok as its one Bearer Authorization line.
func (fx *hxHostile) bearer(tok string) hxReq { return hxReq{authz: hxBearer(tok)} }

// tokReq builds, at run time, a bearer request with a token minted by
// e.tok with spec.
func (fx *hxHostile) tokReq(spec ...authtest.Token) func(t *testing.T) hxReq {
	return func(t *testing.T) hxReq { return fx.bearer(fx.e.tok(t, spec...)) }
}

// validPayload returns the JSON of valid claims with extra raw members
// inserted before the closing brace (for duplicate member names).
func (fx *hxHostile) validPayload(extra string) []byte {
	b, _ := json.Marshal(fx.e.claims())
	return append(b[:len(b)-1], []byte(extra+"}")...)
}

// now is the issuer's current time in Unix seconds.
func (fx *hxHostile) now() int64 { return fx.e.iss.Now().Unix() }

// uniqueSub gives a token a subject of its own, so that per-principal
// bounds (step-up) of one case do not apply to another.
func (fx *hxHostile) uniqueSub(t *testing.T) string { return "hx-" + t.Name() }

// expired mints an expired token.
func (fx *hxHostile) expired(t *testing.T) string { return fx.e.tok(t, authtest.Expired()) }

// TestHostileTokens sends more than a hundred hostile tokens and requests,
// grouped by attack class (RFC 6750, RFC 7515/7519, RFC 8725, RFC 9068,
// RFC 9728), over real HTTP to the example MCP server, which validates
// with validate.Validator and a validate/jwks key source pointed at an
// authtest issuer. Every case asserts the exact status, WWW-Authenticate,
// body and Cache-Control; that a refused request had none of its body
// read (the middleware stops before the MCP handler); the exact number of
// JWKS fetches; and that no other outbound request was made (metadata,
// introspection, and an attacker's server named in jku/x5u). Each case
// calls notes_write with its name as the text, so at the end the notes
// store must hold exactly the names of the accepted cases: any refused
// case whose tool call ran would show up there.
func TestHostileTokens(t *testing.T) {
	t.Parallel()
	runHostileTokens(t, false)
}

// TestHostileTokensThroughProxy sends the same hostile tokens and
// requests to mcpguard proxy (proxy.New, at the same URL) in front of the
// example server, which trusts only the proxy's assertions: every case
// must get the very answer the library gives (status, WWW-Authenticate,
// body, Cache-Control), the proxy must read no body of a refused request
// and make the same JWKS fetches, and no refused request may reach the
// example server (each accepted one reaches it exactly once).
func TestHostileTokensThroughProxy(t *testing.T) {
	t.Parallel()
	runHostileTokens(t, true)
}

// runHostileTokens is TestHostileTokens, the MCP endpoint served by the
// example server itself or, with proxied, by mcpguard proxy in front of it.
func runHostileTokens(t *testing.T, proxied bool) {
	const rateLimit = 10 * time.Second
	att := newHxAttacker(t)

	esKey := authtest.GenerateKey(jose.ES256, hxKIDES256)
	rsKey := authtest.GenerateKey(jose.RS256, hxKIDRS256)
	rsNoAlg := jose.JSONWebKey{Key: &rsKey.Key.(*rsa.PrivateKey).PublicKey, KeyID: hxKIDRSANone, Use: "sig"}
	encKey := authtest.GenerateKey(jose.ES256, hxKIDEnc)
	encKey.Use = "enc"
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	weakKey := jose.JSONWebKey{Key: weak, KeyID: hxKIDWeak, Algorithm: string(jose.RS256), Use: "sig"}
	dup1 := authtest.GenerateKey(jose.ES256, hxKIDDup)
	dup2 := authtest.GenerateKey(jose.ES256, hxKIDDup)
	foreignDup := authtest.GenerateKey(jose.ES256, hxKIDDup) // never published

	e := newHxEnv(t, hxEnvConfig{
		Proxy: proxied,
		// The source's clock is the issuer's pinned one: a deferred refresh
		// never fires on it, so rate-limited calls must not wait for one.
		JWKS: jwks.Config{RefreshRateLimit: rateLimit, DeferredWaiters: -1},
		BeforeStart: func(iss *authtest.Issuer) {
			// Public halves only: a private key added to the issuer would
			// become the key that signs authtest.Token.Alg's tokens.
			for _, k := range []jose.JSONWebKey{esKey.Public(), rsKey.Public(), rsNoAlg, encKey.Public(), weakKey.Public(), dup1.Public(), dup2.Public()} {
				iss.AddKey(k)
			}
		},
	})
	ctx := hxContext(t, 50*time.Second)

	fx := &hxHostile{
		e: e, att: att, ctx: ctx,
		es: hxSigner{esKey}, rs: hxSigner{rsKey}, attacker: hxSigner{att.key},
		encKey: encKey, weakKey: weakKey, dup1: dup1, dup2: dup2, foreignDup: foreignDup,
		ok: e.wantOK(), invalid: e.wantInvalidToken(), noTok: e.wantNoToken(),
		malformed:    e.wantInvalidRequest(hxDescMalformed),
		multiple:     e.wantInvalidRequest(hxDescMultiple),
		inQuery:      e.wantInvalidRequest(hxDescQuery),
		insufficient: e.wantInsufficient(hxBaseScope, server.ScopeNotesWrite),
	}
	cases := slices.Concat(
		hxExtractionCases(fx),
		hxSerializationCases(fx),
		hxAlgorithmCases(fx),
		hxSignatureCases(fx),
		hxKeyCases(fx),
		hxCritCases(fx),
		hxTypCases(fx),
		hxTimeCases(fx),
		hxIssuerAudienceCases(fx),
		hxScopeCases(fx),
		hxConfirmationCases(fx),
	)

	// Warm up: the key source's first fetch, through a valid request.
	if r := e.whoami(ctx, t, e.tok(t)); r.status != http.StatusOK {
		t.Fatalf("warm-up: status %d: %s", r.status, r.body)
	}
	// Behind the proxy, the env's own key source serves the wantErr
	// checks only: its fetches (one now, and a refresh for some checks)
	// are not the proxy's.
	if proxied {
		if _, err := e.val.Validate(ctx, e.tok(t)); err != nil {
			t.Fatalf("the env's validator: %v", err)
		}
	}
	jwksFetches := func() int64 {
		n := e.iss.Requests(e.iss.JWKSURL)
		if proxied {
			n -= e.refreshes.started.Load()
		}
		return n
	}
	var wantFetches int64 = 1
	if n := jwksFetches(); n != wantFetches {
		t.Fatalf("JWKS fetches after warm-up = %d, want %d", n, wantFetches)
	}

	var accepted []string
	perClass := map[string]int{}
	for _, class := range hxClasses(cases) {
		t.Run(class, func(t *testing.T) {
			for _, c := range cases {
				if c.class != class {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					// Subtests run one at a time, so these need no lock;
					// they are counted here so that -run filters work.
					perClass[class]++
					wantFetches += c.fetches
					// Open the key source's on-demand rate limit (it runs
					// on the issuer's clock), so a case that may refresh
					// does so exactly once.
					e.iss.Advance(rateLimit)
					req := c.req(t)
					if req.text == "" {
						req.text = class + "/" + c.name
					}
					want := c.want
					if proxied && c.proxied != nil {
						want = *c.proxied
					}
					if want.status == http.StatusOK {
						accepted = append(accepted, class+"/"+c.name)
					}
					before := e.counts(att)
					got := e.do(ctx, t, req)
					after := e.counts(att)
					want.check(t, got)
					if d := after.jwks - before.jwks; d != c.fetches {
						t.Errorf("JWKS fetches = %d, want %d", d, c.fetches)
					}
					if after.metadata != before.metadata || after.introspection != before.introspection {
						t.Errorf("unexpected requests to the issuer: metadata %d→%d, introspection %d→%d",
							before.metadata, after.metadata, before.introspection, after.introspection)
					}
					if proxied {
						reached := 0
						if want.status == http.StatusOK {
							reached = 1
						}
						if n := e.upstream.get(got.id); n != reached {
							t.Errorf("the example server behind the proxy received the request %d times, want %d", n, reached)
						}
					}
					if c.wantErr != nil {
						tok, found := strings.CutPrefix(req.authz[0], "Bearer ")
						if !found {
							t.Fatalf("wantErr needs a single Bearer line, have %q", req.authz)
						}
						if _, err := e.val.Validate(ctx, tok); !errors.Is(err, c.wantErr) {
							t.Errorf("Validate error = %v, want %v", err, c.wantErr)
						}
					}
					if after.attacker != 0 {
						t.Errorf("the attacker's server received %d requests, want 0", after.attacker)
					}
					// Only a valid token lets the middleware read the body
					// (to find the MCP operation): 200 and 403.
					if s := got.status; s != http.StatusOK && s != http.StatusForbidden && got.bodyRead != 0 {
						t.Errorf("server read %d body bytes of a refused request, want 0", got.bodyRead)
					}
				})
			}
		})
	}

	// The notes store holds exactly the accepted cases: no refused case's
	// notes_write ran.
	got := e.notes(ctx, t)
	slices.Sort(got)
	slices.Sort(accepted)
	if !slices.Equal(got, accepted) {
		var leaked []string
		for _, n := range got {
			if !slices.Contains(accepted, n) {
				leaked = append(leaked, n)
			}
		}
		t.Errorf("notes = %q\nwant %q\nrefused cases whose tool call ran: %q", got, accepted, leaked)
	}
	if n := jwksFetches(); n != wantFetches {
		t.Errorf("total JWKS fetches = %d, want %d", n, wantFetches)
	}
	if n := att.requests.Load(); n != 0 {
		t.Errorf("attacker server requests = %d, want 0", n)
	}
	total := 0
	for _, n := range perClass {
		total += n
	}
	t.Logf("hostile cases: %d in total, per class %v", total, perClass)
}

// hxClasses returns the classes of cases in first-seen order.
func hxClasses(cases []hxCase) []string {
	var out []string
	for _, c := range cases {
		if !slices.Contains(out, c.class) {
			out = append(out, c.class)
		}
	}
	return out
}
