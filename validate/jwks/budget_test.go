package jwks_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// Slow (not hanging) AS, no cache: a forged token under a kid that the
// periodic refresh is just bringing in waits for that refresh and then for
// a second, on-demand refresh.
func TestValidateBudgetSlowASUncached(t *testing.T) {
	k1, k2 := newKey(t, "k1"), newKey(t, "k2")
	as := newJWKS(t, k1.jwk())
	src, err := jwks.New(jwks.Config{Issuer: iss, JWKSURL: as.srv.URL + "/jwks", RefreshInterval: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	v, _ := validate.New(validate.Config{
		Issuers: []validate.Issuer{{Issuer: iss, Keys: src}}, Audiences: []string{"https://rs.example/mcp"}, CacheSize: -1,
	})
	if _, err := v.Validate(t.Context(), mint(t, k1, claims("https://rs.example/mcp"))); err != nil {
		t.Fatal(err)
	}
	as.setKeys(k1.jwk(), k2.jwk())
	as.mu.Lock()
	as.hang = false
	as.mu.Unlock()
	// make the AS slow: 1.8 s per answer
	newSlow(as, 1800*time.Millisecond)
	// wait until the loop's refresh is in flight
	f0 := jwks.FetchesOf(src)
	for deadline := time.Now().Add(10 * time.Second); jwks.FetchesOf(src) == f0; {
		if time.Now().After(deadline) {
			t.Fatal("the background refresh never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tok := mint(t, k2, claims("https://rs.example/mcp"))
	// forge: flip a byte of the signature (plausible length)
	b := []byte(tok)
	i := len(b) - 5
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	start := time.Now()
	_, err = v.Validate(context.Background(), string(b))
	d := time.Since(start)
	t.Logf("Validate = %v after %v", err, d)
	if d > 6*time.Second+1500*time.Millisecond {
		t.Errorf("held %v", d)
	}
}

func newSlow(s *jwksSrv, d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
	return true
}

// Keys rotate every few milliseconds while goroutines validate tokens of
// every key: no data race, and a token is never answered with the claims of
// another token (the race detector and the KeyID check are the oracle).
func TestValidateRotationUnderConcurrentLoad(t *testing.T) {
	ks := []key{newKey(t, "a"), newKey(t, "b"), newKey(t, "c")}
	as := newJWKS(t, ks[0].jwk(), ks[1].jwk())
	src, err := jwks.New(jwks.Config{Issuer: iss, JWKSURL: as.srv.URL + "/jwks", RefreshInterval: 20 * time.Millisecond, RefreshRateLimit: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	v, _ := validate.New(validate.Config{
		Issuers: []validate.Issuer{{Issuer: iss, Keys: src}}, Audiences: []string{"https://rs.example/mcp"}, CacheSize: 8,
	})
	var toks [3][]string
	for i, k := range ks {
		for j := range 20 {
			c := claims("https://rs.example/mcp")
			c["jti"] = fmt.Sprint(j)
			toks[i] = append(toks[i], mint(t, k, c))
		}
	}
	var published [3]atomic.Bool
	published[0].Store(true)
	published[1].Store(true)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
			}
			a, b := n%3, (n+1)%3
			as.setKeys(ks[a].jwk(), ks[b].jwk())
		}
	}()
	var ok, bad atomic.Int64
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := r.IntN(3)
				c, err := v.Validate(context.Background(), toks[i][r.IntN(20)])
				if err == nil {
					ok.Add(1)
					if c.KeyID != ks[i].kid {
						t.Errorf("claims of another token")
					}
				} else {
					bad.Add(1)
				}
			}
		}()
	}
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	t.Logf("ok=%d bad=%d", ok.Load(), bad.Load())
}
