package authtest

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// Key IDs of the keys every [Issuer] starts with.
const (
	kidES256 = "es256-1"
	kidRS256 = "rs256-1"
	kidEdDSA = "eddsa-1"
)

func (i *Issuer) initKeys() error {
	for _, spec := range []struct {
		alg jose.SignatureAlgorithm
		kid string
	}{{jose.ES256, kidES256}, {jose.RS256, kidRS256}, {jose.EdDSA, kidEdDSA}} {
		k, err := generateKey(spec.alg, spec.kid, 2048)
		if err != nil {
			return err
		}
		i.addKeyLocked(k)
	}
	return nil
}

// addKeyLocked publishes the public half of k and, if k is private,
// remembers it for signing (private keys are never forgotten, so tokens can
// still be signed with a key that [Issuer.RemoveKey] withdrew).
func (i *Issuer) addKeyLocked(k jose.JSONWebKey) {
	if k.IsPublic() {
		i.published = append(i.published, k)
		return
	}
	i.private = append(i.private, k)
	i.published = append(i.published, k.Public())
}

// AddKey publishes k in the JWKS as given: its kid, "use" and "alg" are not
// checked, so it can add hostile keys (use "enc", a 1024-bit RSA key, a
// duplicate kid, a key without kid). If k is private, only its public half
// is published, and the private half becomes the key that signs tokens of
// k.Algorithm by default: adding GenerateKey(jose.ES256, "es256-2") rotates
// the signing key. The previous keys stay published until
// [Issuer.RemoveKey].
func (i *Issuer) AddKey(k jose.JSONWebKey) {
	i.mu.Lock()
	i.addKeyLocked(k)
	i.mu.Unlock()
}

// RemoveKey unpublishes every key whose kid is kid and reports whether there
// was one. [Issuer.Token] can still sign with a removed key (it stays the
// default if it was), which makes "token signed by a withdrawn key" tests
// easy; [Issuer.AddKey] a new private key to move on.
func (i *Issuer) RemoveKey(kid string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	kept := i.published[:0:0]
	for _, k := range i.published {
		if k.KeyID != kid {
			kept = append(kept, k)
		}
	}
	removed := len(kept) != len(i.published)
	i.published = kept
	return removed
}

// Keys returns the public keys the JWKS currently publishes, in order: first
// "es256-1" (ES256), "rs256-1" (RS256) and "eddsa-1" (EdDSA), then every key
// added with [Issuer.AddKey].
func (i *Issuer) Keys() []jose.JSONWebKey {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Clone(i.published)
}

func (i *Issuer) jwks() jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: i.Keys()}
}

// signingKey returns the private key and kid that sign a token with alg:
// the newest private key whose "alg" is alg; else, for RS*/PS*, the RS256
// key (a key/alg mismatch); for HS*, the PEM of the RS256 public key as
// HMAC secret (the classic algorithm-confusion attack).
func (i *Issuer) signingKey(alg jose.SignatureAlgorithm) (any, string, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	find := func(match func(k jose.JSONWebKey) bool) *jose.JSONWebKey {
		for n := len(i.private) - 1; n >= 0; n-- {
			if match(i.private[n]) {
				return &i.private[n]
			}
		}
		return nil
	}
	if k := find(func(k jose.JSONWebKey) bool { return k.Algorithm == string(alg) }); k != nil {
		return k.Key, k.KeyID, nil
	}
	rsaKey := find(func(k jose.JSONWebKey) bool { return k.KeyID == kidRS256 })
	switch a := string(alg); {
	case strings.HasPrefix(a, "RS"), strings.HasPrefix(a, "PS"):
		return rsaKey.Key, kidRS256, nil
	case strings.HasPrefix(a, "HS"):
		der, err := x509.MarshalPKIXPublicKey(rsaKey.Public().Key)
		if err != nil {
			return nil, "", err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), kidRS256, nil
	}
	return nil, "", fmt.Errorf("authtest: issuer has no private key for %q; AddKey one (see GenerateKey)", alg)
}

// GenerateKey returns a new private JWK for alg with the given kid, "use"
// "sig" and "alg" alg. Supported: ES256, ES384, ES512, RS*/PS* (2048-bit),
// EdDSA (Ed25519) and HS256/384/512 (a random secret). It panics on any
// other algorithm. Publish it with [Issuer.AddKey] (after editing Use or
// KeyID for hostile variants) and sign with it through [Token].Key.
func GenerateKey(alg jose.SignatureAlgorithm, kid string) jose.JSONWebKey {
	k, err := generateKey(alg, kid, 2048)
	if err != nil {
		panic(err.Error())
	}
	return k
}

func generateKey(alg jose.SignatureAlgorithm, kid string, rsaBits int) (jose.JSONWebKey, error) {
	if rsaBits == 0 {
		rsaBits = 2048
	}
	var key any
	var err error
	switch alg {
	case jose.ES256:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.ES384:
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case jose.ES512:
		key, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
		key, err = rsa.GenerateKey(rand.Reader, rsaBits)
	case jose.EdDSA:
		_, key, err = ed25519.GenerateKey(rand.Reader)
	case jose.HS256, jose.HS384, jose.HS512:
		secret := make([]byte, 64)
		_, _ = rand.Read(secret)
		key = secret
	default:
		return jose.JSONWebKey{}, fmt.Errorf("authtest: cannot generate a key for algorithm %q", alg)
	}
	if err != nil {
		return jose.JSONWebKey{}, fmt.Errorf("authtest: generating %s key: %w", alg, err)
	}
	return jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: string(alg), Use: "sig"}, nil
}

// randomHex returns n random bytes, hex-encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
