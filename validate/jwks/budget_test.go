package jwks_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// MaxKeyWait bounds what one Validate call waits on its key source beyond
// the key source's own bounds: a forged token under a known kid fails its
// signature, and the refresh that follows (re-keying under an unchanged
// kid) hangs on the AS; Validate gives up when its budget runs out, with
// the signature error. Told by the outcome, not timed: the key source's
// WaitTimeout and FetchTimeout are an hour and the caller's context 30 s,
// so only the budget can have ended the wait while the refresh still hangs.
func TestValidateBudgetBoundsRefresh(t *testing.T) {
	const limit = 10 * time.Millisecond
	k1 := newKey(t, "k1")
	as := newJWKS(t, k1.jwk())
	clk := &steppedClock{}
	src, err := jwks.New(jwks.Config{
		Issuer: iss, JWKSURL: as.srv.URL + "/jwks", RefreshInterval: time.Hour, RefreshRateLimit: limit,
		WaitTimeout: time.Hour, FetchTimeout: time.Hour, Now: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	v, err := validate.New(validate.Config{
		Issuers: []validate.Issuer{{Issuer: iss, Keys: src}}, Audiences: []string{"https://rs.example/mcp"},
		CacheSize: -1, MaxKeyWait: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(t.Context(), mint(t, k1, claims("https://rs.example/mcp"))); err != nil {
		t.Fatal(err)
	}
	as.setHang()
	clk.Advance(limit) // the on-demand rate limit opens
	f0 := jwks.FetchesOf(src)
	tok := mint(t, k1, claims("https://rs.example/mcp"))
	// forge: flip a byte of the signature (plausible length)
	b := []byte(tok)
	i := len(b) - 5
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	ctx := eventCtx(t)
	start := time.Now()
	_, err = v.Validate(ctx, string(b))
	d := time.Since(start)
	t.Logf("Validate = %v after %v", err, d)
	if !errors.Is(err, validate.Error{Reason: "signature"}) {
		t.Errorf("Validate(forged) = %v, want %v", err, validate.Error{Reason: "signature"})
	}
	if ctx.Err() != nil {
		t.Fatalf("Validate returned only when the caller's context ended (%v): MaxKeyWait did not bound the refresh", ctx.Err())
	}
	if running, _ := jwks.RunningJoins(src); !running || jwks.FetchesOf(src) != f0+1 {
		t.Errorf("refresh running = %t, fetches = %d; want the one refresh the signature failure started, still hanging", running, jwks.FetchesOf(src)-f0)
	}
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
