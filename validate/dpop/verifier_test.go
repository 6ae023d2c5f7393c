package dpop

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// TestVerify drives every RFC 9449 §4.3 check and the classic mistakes
// through one table: each hostile proof must fail with its sentinel.
func TestVerify(t *testing.T) {
	testKeys(t)
	tests := []struct {
		name    string
		mod     func(t *testing.T, s *proofSpec, r *Request)
		proofs  func(t *testing.T, s proofSpec) []string // default: one proof of s
		wantErr error
	}{
		{name: "ES256", wantErr: nil},
		{name: "ES384", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.key, s.header["alg"], s.header["jwk"], r.JKT = ec384, "ES384", jwkOf(t, ec384), thumb(t, ec384)
		}},
		{name: "RS256", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.key, s.header["alg"], s.header["jwk"], r.JKT = rsaKey, "RS256", jwkOf(t, rsaKey), thumb(t, rsaKey)
		}},
		{name: "PS256", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.key, s.header["alg"], s.header["jwk"], r.JKT = rsaKey, "PS256", jwkOf(t, rsaKey), thumb(t, rsaKey)
		}},
		{name: "EdDSA", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.key, s.header["alg"], s.header["jwk"], r.JKT = edKey, "EdDSA", jwkOf(t, edKey), thumb(t, edKey)
		}},
		{name: "typ application/dpop+jwt", mod: func(t *testing.T, s *proofSpec, r *Request) { s.header["typ"] = "application/dpop+jwt" }},
		{name: "token request without ath", mod: func(t *testing.T, s *proofSpec, r *Request) {
			delete(s.claims, "ath")
			r.AccessToken, r.JKT = "", ""
		}},
		{name: "extra claims allowed", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["x"] = []int{1} }},

		// Check 1: exactly one proof.
		{name: "no proof", proofs: func(t *testing.T, s proofSpec) []string { return nil }, wantErr: errNoProof},
		{name: "two proofs", proofs: func(t *testing.T, s proofSpec) []string {
			return []string{s.sign(t), s.sign(t)}
		}, wantErr: errMultipleProofs},
		{name: "two proofs in one field", proofs: func(t *testing.T, s proofSpec) []string {
			return []string{s.sign(t) + ", " + s.sign(t)}
		}, wantErr: errMalformed},
		{name: "too large", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.claims["pad"] = strings.Repeat("a", defaultMaxProofBytes)
		}, wantErr: errTooLarge},

		// Check 2: a well-formed JWT.
		{name: "two segments", proofs: func(t *testing.T, s proofSpec) []string {
			p := s.sign(t)
			return []string{p[:strings.LastIndex(p, ".")]}
		}, wantErr: errMalformed},
		{name: "four segments", proofs: func(t *testing.T, s proofSpec) []string { return []string{s.sign(t) + ".x"} }, wantErr: errMalformed},
		{name: "padded base64", proofs: func(t *testing.T, s proofSpec) []string {
			p := s.sign(t)
			i := strings.Index(p, ".")
			return []string{p[:i] + "=" + p[i:]}
		}, wantErr: errMalformed},
		{name: "empty signature", proofs: func(t *testing.T, s proofSpec) []string {
			p := s.sign(t)
			return []string{p[:strings.LastIndex(p, ".")+1]}
		}, wantErr: errMalformed},
		{name: "header not JSON", mod: func(t *testing.T, s *proofSpec, r *Request) { s.rawHdr = "not json" }, wantErr: errMalformed},
		{name: "header array", mod: func(t *testing.T, s *proofSpec, r *Request) { s.rawHdr = `["dpop+jwt"]` }, wantErr: errMalformed},
		{name: "duplicate alg header", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.rawHdr = `{"typ":"dpop+jwt","alg":"ES256","alg":"none","jwk":` + mustJSON(t, s.header["jwk"]) + `}`
		}, wantErr: errMalformed},
		{name: "duplicate htu claim", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.rawClm = `{"jti":"d1","htm":"POST","htu":"https://evil.example/mcp","htu":"` + testURI + `","iat":` + itoa(now.Unix()) + `,"ath":"` + ath(testToken) + `"}`
		}, wantErr: errMalformed},
		// The module's rule 4: a case variant of a member read, beside it.
		{name: "htm and HTM claims", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.claims["HTM"] = "GET"
		}, wantErr: errMalformed},
		{name: "alg and Alg headers", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.rawHdr = `{"typ":"dpop+jwt","alg":"ES256","Alg":"none","jwk":` + mustJSON(t, s.header["jwk"]) + `}`
		}, wantErr: errMalformed},
		{name: "jti and JTI claims", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["JTI"] = "other" }, wantErr: errMalformed},
		{name: "nonce and noncE claims", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["noncE"] = "n" }, wantErr: errMalformed},
		{name: "private member in another case in jwk", mod: func(t *testing.T, s *proofSpec, r *Request) {
			jwk := map[string]any{}
			for k, v := range s.header["jwk"].(map[string]any) {
				jwk[k] = v
			}
			jwk["D"] = "AAAA"
			s.header["jwk"] = jwk
		}, wantErr: errKey},
		{name: "invalid UTF-8 in claims", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.rawClm = "{\"jti\":\"\xff\",\"htm\":\"POST\",\"htu\":\"" + testURI + "\",\"iat\":" + itoa(now.Unix()) + ",\"ath\":\"" + ath(testToken) + "\"}"
		}, wantErr: errMalformed},

		// Check 3: required claims, with their types.
		{name: "no jti", mod: func(t *testing.T, s *proofSpec, r *Request) { delete(s.claims, "jti") }, wantErr: errMalformed},
		{name: "no htm", mod: func(t *testing.T, s *proofSpec, r *Request) { delete(s.claims, "htm") }, wantErr: errMalformed},
		{name: "HTM instead of htm", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.claims["HTM"] = s.claims["htm"]
			delete(s.claims, "htm")
		}, wantErr: errMalformed},
		{name: "no htu", mod: func(t *testing.T, s *proofSpec, r *Request) { delete(s.claims, "htu") }, wantErr: errMalformed},
		{name: "no iat", mod: func(t *testing.T, s *proofSpec, r *Request) { delete(s.claims, "iat") }, wantErr: errMalformed},
		{name: "iat string", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["iat"] = itoa(now.Unix()) }, wantErr: errMalformed},
		{name: "jti number", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["jti"] = 7 }, wantErr: errMalformed},
		{name: "no jwk", mod: func(t *testing.T, s *proofSpec, r *Request) { delete(s.header, "jwk") }, wantErr: errMalformed},

		// Check 4: typ.
		{name: "no typ", mod: func(t *testing.T, s *proofSpec, r *Request) { delete(s.header, "typ") }, wantErr: errType},
		{name: "typ JWT", mod: func(t *testing.T, s *proofSpec, r *Request) { s.header["typ"] = "JWT" }, wantErr: errType},
		{name: "typ at+jwt", mod: func(t *testing.T, s *proofSpec, r *Request) { s.header["typ"] = "at+jwt" }, wantErr: errType},
		{name: "crit", mod: func(t *testing.T, s *proofSpec, r *Request) { s.header["crit"] = []string{"exp"} }, wantErr: errType},

		// Check 5: asymmetric algorithm from the allow-list.
		{name: "alg none", mod: func(t *testing.T, s *proofSpec, r *Request) { s.key, s.header["alg"] = nil, "none" }, wantErr: errAlgorithm},
		{name: "alg HS256 keyed with the jwk", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.hmac, s.header["alg"] = []byte(mustJSON(t, s.header["jwk"])), "HS256"
		}, wantErr: errAlgorithm},
		{name: "alg HS256 oct jwk", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.hmac, s.header["alg"] = []byte("0123456789abcdef0123456789abcdef"), "HS256"
			s.header["jwk"] = map[string]any{"kty": "oct", "k": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"}
		}, wantErr: errAlgorithm},
		{name: "alg unknown", mod: func(t *testing.T, s *proofSpec, r *Request) { s.header["alg"] = "ES257" }, wantErr: errAlgorithm},
		{name: "alg lower case", mod: func(t *testing.T, s *proofSpec, r *Request) { s.header["alg"] = "es256" }, wantErr: errAlgorithm},

		// Check 7: a public key only.
		{name: "jwk with private d", mod: func(t *testing.T, s *proofSpec, r *Request) {
			full, _ := jose.JSONWebKey{Key: ecKey}.MarshalJSON()
			s.header["jwk"] = rawJSON(t, full)
		}, wantErr: errKey},
		{name: "jwk RSA with p and q only", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.key, s.header["alg"] = rsaKey, "RS256"
			j := jwkOf(t, rsaKey)
			j["p"], j["q"] = "AQAB", "AQAB"
			s.header["jwk"] = j
		}, wantErr: errKey},
		{name: "jwk symmetric", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.header["jwk"] = map[string]any{"kty": "oct", "k": "c2VjcmV0"}
		}, wantErr: errKey},
		{name: "jwk RSA 1024", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.key, s.header["alg"], s.header["jwk"], r.JKT = rsaSmall, "RS256", jwkOf(t, rsaSmall), thumb(t, rsaSmall)
		}, wantErr: errKey},
		{name: "jwk curve differs from alg", mod: func(t *testing.T, s *proofSpec, r *Request) { s.header["alg"] = "ES384" }, wantErr: errKey},
		{name: "jwk family differs from alg", mod: func(t *testing.T, s *proofSpec, r *Request) { s.header["alg"] = "RS256" }, wantErr: errKey},
		{name: "jwk not an object", mod: func(t *testing.T, s *proofSpec, r *Request) { s.header["jwk"] = "key" }, wantErr: errKey},
		{name: "jwk off curve", mod: func(t *testing.T, s *proofSpec, r *Request) {
			j := jwkOf(t, ecKey)
			j["y"] = j["x"]
			s.header["jwk"] = j
		}, wantErr: errKey},

		// Check 6: the signature, under the jwk.
		{name: "signed by another key", mod: func(t *testing.T, s *proofSpec, r *Request) { s.key = ecKey2 }, wantErr: errSignature},
		{name: "claims changed after signing", proofs: func(t *testing.T, s proofSpec) []string {
			p := strings.Split(s.sign(t), ".")
			s.claims["htm"] = "GET"
			q := strings.Split(s.sign(t), ".")
			return []string{p[0] + "." + q[1] + "." + p[2]}
		}, wantErr: errSignature},

		// Check 8: htm.
		{name: "htm lower case", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htm"] = "post" }, wantErr: errMethod},
		{name: "htm other method", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htm"] = "GET" }, wantErr: errMethod},

		// Check 9: htu, normalised.
		{name: "htu upper-case scheme and host, default port", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = "HTTPS://MCP.Example.COM:443/mcp" }},
		{name: "htu dot segment and encoded unreserved", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = "https://mcp.example.com/x/../%6Dcp" }},
		{name: "htu with query", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = testURI + "?a=1" }, wantErr: errURI},
		{name: "htu with empty query", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = testURI + "?" }, wantErr: errURI},
		{name: "htu with fragment", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = testURI + "#f" }, wantErr: errURI},
		{name: "htu for another resource", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = "https://mcp.example.com/other" }, wantErr: errURI},
		{name: "htu for another host", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = "https://evil.example.com/mcp" }, wantErr: errURI},
		{name: "htu path case differs", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = "https://mcp.example.com/MCP" }, wantErr: errURI},
		{name: "htu http for https", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = "http://mcp.example.com/mcp" }, wantErr: errURI},
		{name: "htu other port", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = "https://mcp.example.com:8443/mcp" }, wantErr: errURI},
		{name: "htu with userinfo", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = "https://u@mcp.example.com/mcp" }, wantErr: errURI},
		{name: "htu relative", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = "/mcp" }, wantErr: errURI},
		{name: "htu trailing slash", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["htu"] = testURI + "/" }, wantErr: errURI},

		// Check 11: iat window.
		{name: "iat 4 minutes ago", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["iat"] = now.Add(-4 * time.Minute).Unix() }},
		{name: "iat 4 minutes ahead", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["iat"] = now.Add(4 * time.Minute).Unix() }},
		{name: "iat fractional", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["iat"] = float64(now.Unix()) + 0.5 }},
		{name: "iat 6 minutes ago", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["iat"] = now.Add(-6 * time.Minute).Unix() }, wantErr: errIssuedAt},
		{name: "iat 6 minutes ahead", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["iat"] = now.Add(6 * time.Minute).Unix() }, wantErr: errIssuedAt},
		{name: "iat negative", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["iat"] = -1 }, wantErr: errMalformed},
		{name: "iat huge", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["iat"] = 1e300 }, wantErr: errMalformed},

		// Check 12: ath and the key binding.
		{name: "no ath", mod: func(t *testing.T, s *proofSpec, r *Request) { delete(s.claims, "ath") }, wantErr: errAccessTokenHash},
		{name: "ath of another token", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["ath"] = ath("another.token.value") }, wantErr: errAccessTokenHash},
		{name: "ath padded", mod: func(t *testing.T, s *proofSpec, r *Request) { s.claims["ath"] = ath(testToken) + "=" }, wantErr: errAccessTokenHash},
		{name: "token bound to another key", mod: func(t *testing.T, s *proofSpec, r *Request) { r.JKT = thumb(t, ecKey2) }, wantErr: errKeyBinding},
		{name: "token without jkt", mod: func(t *testing.T, s *proofSpec, r *Request) { r.JKT = "" }, wantErr: errKeyBinding},
		{name: "proof by another key for a bound token", mod: func(t *testing.T, s *proofSpec, r *Request) {
			s.key, s.header["jwk"] = ecKey2, jwkOf(t, ecKey2)
		}, wantErr: errKeyBinding},
	}
	v := newTestVerifier(t, Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := goodSpec(t).clone()
			r := goodRequest(t)
			if tt.mod != nil {
				tt.mod(t, &s, &r)
			}
			if tt.proofs != nil {
				r.Proofs = tt.proofs(t, s)
			} else {
				r.Proofs = []string{s.sign(t)}
			}
			p, err := v.Verify(bg, r)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify: err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if p != nil {
					t.Error("proof returned with an error")
				}
				if tt.wantErr != errKeyBinding && tt.wantErr != errUseNonce && !errors.Is(err, ErrInvalidProof) {
					t.Errorf("%v does not wrap ErrInvalidProof", err)
				}
				return
			}
			if r.AccessToken != "" && p.JKT != r.JKT {
				t.Errorf("JKT = %q, want %q", p.JKT, r.JKT)
			}
		})
	}
}

// TestReplay: a proof is accepted once within the window, by one Verifier
// or by two sharing a store; a new jti is accepted again.
func TestReplay(t *testing.T) {
	store := NewMemoryReplayStore(10, func() time.Time { return now })
	a := newTestVerifier(t, Config{ReplayStore: store})
	b := newTestVerifier(t, Config{ReplayStore: store})
	s := goodSpec(t)
	proof := s.sign(t)
	if _, err := a.Verify(bg, goodRequest(t, proof)); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]*Verifier{"same verifier": a, "other replica": b} {
		if _, err := v.Verify(bg, goodRequest(t, proof)); !errors.Is(err, errReplay) {
			t.Errorf("%s: replay err = %v, want errReplay", name, err)
		}
	}
	// Same jti re-signed (a new signature) is still a replay.
	if _, err := b.Verify(bg, goodRequest(t, s.sign(t))); !errors.Is(err, errReplay) {
		t.Errorf("re-signed jti: err = %v, want errReplay", err)
	}
	if _, err := b.Verify(bg, goodRequest(t, goodSpec(t).sign(t))); err != nil {
		t.Errorf("fresh jti: %v", err)
	}
}

// TestReplayStoreFailsClosed: a store error refuses the proof.
func TestReplayStoreFailsClosed(t *testing.T) {
	boom := errors.New("redis down")
	v := newTestVerifier(t, Config{ReplayStore: storeFunc(func(string, time.Duration) (bool, error) { return false, boom })})
	_, err := v.Verify(bg, goodRequest(t, goodSpec(t).sign(t)))
	if !errors.Is(err, errReplayStore) || !errors.Is(err, boom) || errors.Is(err, ErrInvalidProof) {
		t.Fatalf("err = %v, want errReplayStore wrapping the store's error", err)
	}
}

// TestReplayTTL: the jti is kept while the proof stays acceptable, plus
// the margin.
func TestReplayTTL(t *testing.T) {
	var got time.Duration
	v := newTestVerifier(t, Config{ReplayStore: storeFunc(func(_ string, ttl time.Duration) (bool, error) { got = ttl; return true, nil })})
	s := goodSpec(t)
	s.claims["iat"] = now.Add(-time.Minute).Unix()
	if _, err := v.Verify(bg, goodRequest(t, s.sign(t))); err != nil {
		t.Fatal(err)
	}
	if want := 4*time.Minute + time.Nanosecond + defaultReplayMargin; got != want {
		t.Errorf("ttl = %v, want %v", got, want)
	}
}

type storeFunc func(key string, ttl time.Duration) (bool, error)

func (f storeFunc) Claim(_ context.Context, _, key string, ttl time.Duration) (bool, error) {
	return f(key, ttl)
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"empty algorithms", Config{Algorithms: []jose.SignatureAlgorithm{}}},
		{"HS256", Config{Algorithms: []jose.SignatureAlgorithm{jose.HS256}}},
		{"none", Config{Algorithms: []jose.SignatureAlgorithm{"none"}}},
		{"negative window", Config{Window: -time.Second}},
		{"short nonce secret", Config{NonceSecret: []byte("short")}},
		{"negative size", Config{MaxProofBytes: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); !errors.Is(err, ErrConfig) {
				t.Errorf("New: err = %v, want ErrConfig", err)
			}
		})
	}
	v, err := New(Config{Algorithms: []jose.SignatureAlgorithm{jose.ES256}})
	if err != nil || strings.Join(v.Algorithms(), " ") != "ES256" {
		t.Errorf("Algorithms = %v, %v", v.Algorithms(), err)
	}
}
