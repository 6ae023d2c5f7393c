package jwks

import (
	"errors"
	"testing"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"

	"github.com/mcpguard/mcpguard/validate"
)

// TestKeyfuncStorage is the keyfunc v3 interop promise: a keyfunc.Keyfunc
// built for golang-jwt hands its jwkset storage to FromStorage, and the
// keys it holds become a validate.KeySource. keyfunc stays a test-only
// dependency, so golang-jwt never enters validate's import graph.
func TestKeyfuncStorage(t *testing.T) {
	k := genKeys(t)
	mem := jwkset.NewMemoryStorage()
	if err := mem.KeyWrite(t.Context(), storageJWK(t, &k.p256.PublicKey, "ec", jwkset.AlgES256, false)); err != nil {
		t.Fatal(err)
	}
	kf, err := keyfunc.New(keyfunc.Options{Ctx: t.Context(), Storage: mem})
	if err != nil {
		t.Fatal(err)
	}
	src := FromStorage(kf.Storage())
	var _ validate.KeySource = src
	ks, err := src.Keys(t.Context(), "ec")
	if err != nil || len(ks) != 1 || !ks[0].IsPublic() {
		t.Fatalf("Keys(ec) = %d keys, %v; want one public key", len(ks), err)
	}
	if _, err := src.Keys(t.Context(), "other"); !errors.Is(err, validate.Error{Reason: "unknown_key"}) {
		t.Fatalf("Keys(other) = %v, want %v", err, validate.Error{Reason: "unknown_key"})
	}
}
