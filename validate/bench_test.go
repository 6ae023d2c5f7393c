package validate

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Benchmarks. BenchmarkFloor is the physical floor: hashing the signing
// input and one signature verification with crypto/ecdsa, crypto/rsa or
// crypto/ed25519 directly, with the signature already decoded (and, for
// ECDSA, already DER-encoded). BenchmarkValidate is the full check of a
// distinct token per iteration (a ring of benchRing pre-minted tokens, warm
// key source, cache disabled). BenchmarkValidateCached repeats one token
// with the cache enabled. Each runs for a small token (about 600 bytes)
// and a 4 KiB one whose claims carry a 150-entry "groups" array, as a
// directory-backed issuer sends. Compare with benchstat:
//
//	go test -run='^$' -bench=. -count=6 ./validate/ > bench.txt
//	benchstat -row /alg,/size,/mode -col .name bench.txt

const benchRing = 1024

// benchSizes are the token sizes benchmarked: "small" is baseClaims, "4k"
// adds benchGroups.
var benchSizes = []string{"small", "4k"}

// benchGroups returns the 150 "groups" of the 4 KiB benchmark token.
func benchGroups() []string {
	g := make([]string, 150)
	for i := range g {
		g[i] = fmt.Sprintf("team-%03d-member", i)
	}
	return g
}

var benchAlgs = []struct {
	name string
	key  func(*testKeys) *testKey
}{
	{"ES256", func(k *testKeys) *testKey { return k.es256 }},
	{"RS256", func(k *testKeys) *testKey { return k.rs256 }},
	{"EdDSA", func(k *testKeys) *testKey { return k.ed }},
}

var (
	ringMu sync.Mutex
	rings  = map[string][]string{}
)

// ring returns benchRing distinct tokens of size signed by k, minted once.
func ring(b testing.TB, k *testKey, size string) []string {
	ringMu.Lock()
	defer ringMu.Unlock()
	if r, ok := rings[k.kid+"/"+size]; ok {
		return r
	}
	r := make([]string, benchRing)
	for i := range r {
		c := with("jti", fmt.Sprintf("jti-%04d", i))
		if size == "4k" {
			c["groups"] = benchGroups()
		}
		r[i] = mint(b, k, c)
	}
	rings[k.kid+"/"+size] = r
	return r
}

// run runs body serially and in parallel as sub-benchmarks. Besides
// sec/op it reports cpu-ns/op, the process CPU time per operation, which
// stays meaningful on a machine shared with other work, where wall time
// does not.
func run(b *testing.B, alg string, body func(i int)) {
	b.Run("alg="+alg+"/mode=serial", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		i := 0
		for b.Loop() {
			body(i)
			i++
		}
		reportCPU(b, start)
	})
	b.Run("alg="+alg+"/mode=parallel", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(benchRing / 8))
			for pb.Next() {
				body(i)
				i++
			}
		})
		reportCPU(b, start)
	})
}

func reportCPU(b *testing.B, start time.Duration) {
	if end := cpuTime(); end > 0 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkFloor(b *testing.B) {
	k := keys(b)
	for _, a := range benchAlgs {
		for _, size := range benchSizes {
			benchFloor(b, a.name, size, a.key(k))
		}
	}
}

func benchFloor(b *testing.B, alg, size string, key *testKey) {
	{
		toks := ring(b, key, size)
		inputs := make([][]byte, len(toks))
		sigs := make([][]byte, len(toks))
		for i, tok := range toks {
			d := strings.LastIndexByte(tok, '.')
			inputs[i] = []byte(tok[:d])
			sig, err := base64.RawURLEncoding.DecodeString(tok[d+1:])
			if err != nil {
				b.Fatal(err)
			}
			if key.alg == jose.ES256 {
				sig = derSignature(b, sig)
			}
			sigs[i] = sig
		}
		pub := key.priv.Public()
		run(b, alg+"/size="+size, func(i int) {
			i %= benchRing
			var ok bool
			switch p := pub.(type) {
			case *ecdsa.PublicKey:
				h := sha256.Sum256(inputs[i])
				ok = ecdsa.VerifyASN1(p, h[:], sigs[i])
			case *rsa.PublicKey:
				h := sha256.Sum256(inputs[i])
				ok = rsa.VerifyPKCS1v15(p, crypto.SHA256, h[:], sigs[i]) == nil
			case ed25519.PublicKey:
				ok = ed25519.Verify(p, inputs[i], sigs[i])
			}
			if !ok {
				b.Fatal("floor: signature did not verify")
			}
		})
	}
}

func benchValidator(b *testing.B, key *testKey, cacheSize int) *Validator {
	return newTestValidator(b, func(c *Config) {
		c.Issuers[0].Keys = &StaticKeys{Set: []jose.JSONWebKey{key.jwk()}}
		c.CacheSize = cacheSize
	})
}

func BenchmarkValidate(b *testing.B) {
	k := keys(b)
	for _, a := range benchAlgs {
		for _, size := range benchSizes {
			key := a.key(k)
			toks := ring(b, key, size)
			v := benchValidator(b, key, -1)
			ctx := b.Context()
			run(b, a.name+"/size="+size, func(i int) {
				if _, err := v.Validate(ctx, toks[i%benchRing]); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

func BenchmarkValidateCached(b *testing.B) {
	k := keys(b)
	for _, a := range benchAlgs {
		for _, size := range benchSizes {
			key := a.key(k)
			tok := ring(b, key, size)[0]
			v := benchValidator(b, key, 0)
			ctx := b.Context()
			if _, err := v.Validate(ctx, tok); err != nil {
				b.Fatal(err)
			}
			run(b, a.name+"/size="+size, func(int) {
				if _, err := v.Validate(ctx, tok); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkGoJose is the road not taken: go-jose's jwt.ParseSigned and
// Claims into jwt.Claims plus scope and client_id, with none of this
// package's checks. It is the lower bound of a validator built on go-jose's
// parse-and-verify path, kept to show why Validate verifies directly.
func BenchmarkGoJose(b *testing.B) {
	k := keys(b)
	algs := defaultAlgorithms()
	for _, a := range benchAlgs {
		key := a.key(k)
		toks := ring(b, key, "small")
		pub := key.priv.Public()
		run(b, a.name, func(i int) {
			tok, err := jwt.ParseSigned(toks[i%benchRing], algs)
			if err != nil {
				b.Fatal(err)
			}
			var c struct {
				jwt.Claims
				Scope    string `json:"scope"`
				ClientID string `json:"client_id"`
			}
			if err := tok.Claims(pub, &c); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkRejectHostile measures what a forged token of the maximum
// default size can cost before it is refused: thousands of header
// parameters or claims, with a kid and iss that route to a real key and a
// signature that cannot verify. It should stay near one signature check.
func BenchmarkRejectHostile(b *testing.B) {
	k := keys(b)
	v := benchValidator(b, k.es256, -1)
	many := func(prefix string) string {
		var sb strings.Builder
		sb.WriteString(prefix)
		for i := 0; sb.Len() < 5900; i++ {
			fmt.Fprintf(&sb, `,"%x":0`, i)
		}
		return sb.String() + "}"
	}
	sig := "." + strings.Repeat("A", 86)
	for name, tok := range map[string]string{
		"header-params":  b64enc(many(`{"alg":"ES256","typ":"at+jwt","kid":"es256"`)) + "." + b64enc(`{"iss":"`+testIss+`"}`) + sig,
		"payload-claims": b64enc(esHdr) + "." + b64enc(many(`{"iss":"`+testIss+`"`)) + sig,
	} {
		if len(tok) > defaultMaxTokenBytes {
			b.Fatalf("%s: token of %d bytes is over the default limit", name, len(tok))
		}
		b.Run("kind="+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Validate(b.Context(), tok); err == nil {
					b.Fatal("accepted a forged token")
				}
			}
		})
	}
}
