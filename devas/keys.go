package devas

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"fmt"

	"github.com/go-jose/go-jose/v4"
)

// newSigner returns the access token signer and the public JWK for cfg,
// generating a key when cfg.Key is nil.
func newSigner(cfg Config) (jose.Signer, jose.JSONWebKey, error) {
	alg := cfg.SigningAlgorithm
	key := cfg.Key
	if key == nil {
		var err error
		if key, err = generateKey(alg); err != nil {
			return nil, jose.JSONWebKey{}, err
		}
	}
	if err := checkKey(alg, key); err != nil {
		return nil, jose.JSONWebKey{}, err
	}
	pub := jose.JSONWebKey{Key: key.Public(), Algorithm: string(alg), Use: "sig", KeyID: cfg.KeyID}
	if pub.KeyID == "" {
		tp, err := pub.Thumbprint(crypto.SHA256)
		if err != nil {
			return nil, jose.JSONWebKey{}, fmt.Errorf("%w: key thumbprint: %w", ErrConfig, err)
		}
		pub.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	}
	if !pub.Valid() {
		return nil, jose.JSONWebKey{}, fmt.Errorf("%w: invalid key", ErrConfig)
	}
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: pub.KeyID}},
		(&jose.SignerOptions{}).WithType("at+jwt"),
	)
	if err != nil {
		return nil, jose.JSONWebKey{}, fmt.Errorf("%w: signer: %w", ErrConfig, err)
	}
	return signer, pub, nil
}

// generateKey makes a fresh key for alg with crypto/rand.
func generateKey(alg jose.SignatureAlgorithm) (crypto.Signer, error) {
	switch alg {
	case jose.ES256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.ES384:
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case jose.ES512:
		return ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
		return rsa.GenerateKey(rand.Reader, 2048)
	case jose.EdDSA:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	}
	return nil, fmt.Errorf("%w: unsupported SigningAlgorithm", ErrConfig)
}

// checkKey verifies that key suits alg.
func checkKey(alg jose.SignatureAlgorithm, key crypto.Signer) error {
	ok := false
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		want := map[jose.SignatureAlgorithm]elliptic.Curve{
			jose.ES256: elliptic.P256(), jose.ES384: elliptic.P384(), jose.ES512: elliptic.P521(),
		}[alg]
		ok = want != nil && k.Curve == want
	case *rsa.PrivateKey:
		switch alg {
		case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
			ok = k.N.BitLen() >= 2048
		}
	case ed25519.PrivateKey:
		ok = alg == jose.EdDSA
	}
	if !ok {
		return fmt.Errorf("%w: Key does not suit SigningAlgorithm (or RSA key under 2048 bits)", ErrConfig)
	}
	return nil
}
