package jwks

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/MicahParks/jwkset"

	"github.com/mcpguard/mcpguard/validate"
)

// noKeyRead fails the test if KeyRead is used: on jwkset's HTTP storage it
// can block on the unknown-kid limiter.
type noKeyRead struct {
	jwkset.Storage
	t *testing.T
}

func (n noKeyRead) KeyRead(context.Context, string) (jwkset.JWK, error) {
	n.t.Error("FromStorage called KeyRead")
	return jwkset.JWK{}, jwkset.ErrKeyNotFound
}

func storageJWK(t *testing.T, key any, kid string, alg jwkset.ALG, private bool) jwkset.JWK {
	t.Helper()
	j, err := jwkset.NewJWKFromKey(key, jwkset.JWKOptions{
		Marshal:  jwkset.JWKMarshalOptions{Private: private},
		Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: alg},
	})
	if err != nil {
		t.Fatalf("NewJWKFromKey(%s): %v", kid, err)
	}
	return j
}

func TestFromStorage(t *testing.T) {
	k := genKeys(t)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	mem := jwkset.NewMemoryStorage()
	for _, j := range []jwkset.JWK{
		storageJWK(t, &k.p256.PublicKey, "ec", jwkset.AlgES256, false),
		storageJWK(t, &other.PublicKey, "ec", jwkset.AlgES256, false), // same kid twice
		storageJWK(t, &k.rsa2048.PublicKey, "rsa", jwkset.AlgRS256, false),
		storageJWK(t, &k.rsa1024.PublicKey, "weak", jwkset.AlgRS256, false),
		storageJWK(t, k.p384, "private", jwkset.AlgES384, true),
		storageJWK(t, []byte("0123456789abcdef0123456789abcdef"), "hmac", jwkset.AlgHS256, true),
		storageJWK(t, &k.p256.PublicKey, "mismatch", jwkset.AlgRS256, false),
	} {
		if err := mem.KeyWrite(t.Context(), j); err != nil {
			t.Fatal(err)
		}
	}
	src := FromStorage(noKeyRead{Storage: mem, t: t})
	tests := []struct {
		kid     string
		want    int
		wantErr error
	}{
		{kid: "ec", want: 2},
		{kid: "rsa", want: 1},
		{kid: "weak", wantErr: validate.Error{Reason: "unknown_key"}},
		{kid: "private", wantErr: validate.Error{Reason: "unknown_key"}},
		{kid: "hmac", wantErr: validate.Error{Reason: "unknown_key"}},
		{kid: "mismatch", wantErr: validate.Error{Reason: "unknown_key"}},
		{kid: "missing", wantErr: validate.Error{Reason: "unknown_key"}},
		{kid: "", want: 3}, // a token without kid: every usable key
	}
	for _, tt := range tests {
		t.Run(tt.kid, func(t *testing.T) {
			ks, err := src.Keys(t.Context(), tt.kid)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Keys(%q) = %v, want %v", tt.kid, err, tt.wantErr)
			}
			if len(ks) != tt.want {
				t.Fatalf("Keys(%q) returned %d keys, want %d", tt.kid, len(ks), tt.want)
			}
			for _, k := range ks {
				if !k.IsPublic() || (tt.kid != "" && k.KeyID != tt.kid) || k.Algorithm == "" {
					t.Errorf("served key %+v", k)
				}
			}
		})
	}

	t.Run("no usable keys", func(t *testing.T) {
		bad := jwkset.NewMemoryStorage()
		_ = bad.KeyWrite(t.Context(), storageJWK(t, &k.rsa1024.PublicKey, "weak", jwkset.AlgRS256, false))
		for _, st := range []jwkset.Storage{nil, jwkset.NewMemoryStorage(), bad} {
			if _, err := FromStorage(st).Keys(t.Context(), "weak"); !errors.Is(err, validate.ErrKeysUnavailable) {
				t.Errorf("Keys on %T = %v, want %v", st, err, validate.ErrKeysUnavailable)
			}
		}
	})
}

// TestFromStorageNeverWaitsOnKeyfuncLimiter uses jwkset's own HTTP storage
// (what keyfunc v3's k.Storage() returns) with a limiter whose Wait would
// block for minutes: unknown kids must still fail at once.
func TestFromStorageNeverWaitsOnKeyfuncLimiter(t *testing.T) {
	f := newFake(t, ecJWK(t, "k1"))
	st, err := jwkset.NewDefaultHTTPClientCtx(t.Context(), []string{f.url()})
	if err != nil {
		t.Fatal(err)
	}
	src := FromStorage(st)
	if _, err := src.Keys(t.Context(), "k1"); err != nil {
		t.Fatalf("Keys(k1) = %v", err)
	}
	hits := f.hits.Load()
	// The limiter's Wait would block for minutes: with a deadline that it
	// cannot meet, it fails at once, so a call that waited on it gets an
	// error other than unknown_key, and one that blocked otherwise gets no
	// answer before the context ends.
	ctx := eventCtx(t)
	for range 3 {
		if _, err := src.Keys(ctx, "unknown"); !errors.Is(err, validate.Error{Reason: "unknown_key"}) || ctx.Err() != nil {
			t.Fatalf("Keys(unknown) = %v, want %v", err, validate.Error{Reason: "unknown_key"})
		}
	}
	if got := f.hits.Load(); got != hits {
		t.Errorf("fetches grew from %d to %d; the adapter must not refresh", hits, got)
	}
}

func TestSourceStorageMirrorsServedKeys(t *testing.T) {
	clk := newClock()
	k1, k2 := ecJWK(t, "k1"), ecJWK(t, "k2")
	f := newFake(t, k1, k2)
	mem := jwkset.NewMemoryStorage()
	cfg := testConfig(t, f, clk)
	cfg.Storage = mem
	s := newSource(t, cfg)
	waitFirst(t, s)
	f.setKeys(t, k2)
	if err := s.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	all, _ := mem.KeyReadAll(t.Context())
	if len(all) != 1 || all[0].Marshal().KID != "k2" || all[0].Marshal().ALG != jwkset.AlgES256 {
		t.Errorf("storage = %+v, want only k2", all)
	}
	// The mirror is a valid KeySource too.
	if _, err := FromStorage(mem).Keys(t.Context(), "k2"); err != nil {
		t.Errorf("FromStorage(mirror).Keys(k2) = %v", err)
	}
}
