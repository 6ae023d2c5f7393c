package jwks_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// jwksServer serves a JWK Set with one P-256 key under kid "2026-07".
func jwksServer() *httptest.Server {
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &priv.PublicKey, KeyID: "2026-07", Algorithm: "ES256", Use: "sig"},
	}})
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(set)
	}))
}

func Example() {
	srv := jwksServer()
	defer srv.Close()

	src, err := jwks.New(jwks.Config{
		Issuer:  srv.URL,
		JWKSURL: srv.URL + "/jwks", // leave empty to discover jwks_uri from the issuer's metadata
	})
	if err != nil {
		panic(err)
	}
	defer src.Close()

	// The first call waits (up to WaitTimeout) for the initial fetch.
	keys, err := src.Keys(context.Background(), "2026-07")
	if err != nil {
		panic(err)
	}
	fmt.Println(keys[0].KeyID, keys[0].Algorithm, keys[0].IsPublic())

	_, err = src.Keys(context.Background(), "unknown-kid")
	fmt.Println(errors.Is(err, validate.Error{Reason: "unknown_key"}))
	// Output:
	// 2026-07 ES256 true
	// true
}

func ExampleSource_Refresh() {
	srv := jwksServer()
	defer srv.Close()
	src, err := jwks.New(jwks.Config{Issuer: srv.URL, JWKSURL: srv.URL + "/jwks", RefreshRateLimit: 200 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	defer src.Close()
	if _, err := src.Keys(context.Background(), "2026-07"); err != nil { // waits for the initial fetch
		panic(err)
	}

	fmt.Println(src.Refresh(context.Background()))
	// Within RefreshRateLimit another refresh waits for the deferred one,
	// which runs when the limit opens, and returns its outcome; a caller
	// that cannot wait that long gets an error (rate limited).
	start := time.Now()
	fmt.Println(src.Refresh(context.Background()), time.Since(start) >= 100*time.Millisecond)
	short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	fmt.Println(src.Refresh(short) != nil)
	// Output:
	// <nil>
	// <nil> true
	// true
}

func ExampleFromStorage() {
	// A jwkset.Storage, for example k.Storage() of a keyfunc v3 Keyfunc.
	st := jwkset.NewMemoryStorage()
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwk, _ := jwkset.NewJWKFromKey(&priv.PublicKey, jwkset.JWKOptions{
		Metadata: jwkset.JWKMetadataOptions{KID: "a", ALG: jwkset.AlgES256},
	})
	_ = st.KeyWrite(context.Background(), jwk)

	var ks validate.KeySource = jwks.FromStorage(st)
	keys, err := ks.Keys(context.Background(), "a")
	fmt.Println(len(keys), err)
	// Output: 1 <nil>
}
