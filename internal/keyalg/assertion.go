package keyalg

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/go-jose/go-jose/v4"
)

// Assertion returns the JWS algorithm mcpguard proxy signs its upstream
// assertions with for the public key pub, refusing weak keys: ES256 or
// ES384 for ECDSA P-256 or P-384, EdDSA for Ed25519, RS256 for RSA of
// 2048 bits or more. The proxy and the audit that forges its assertions
// share this rule.
func Assertion(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		}
		return "", errors.New("EC key: want P-256 or P-384")
	case ed25519.PublicKey:
		return jose.EdDSA, nil
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return "", fmt.Errorf("RSA key of %d bits: want 2048 or more", k.N.BitLen())
		}
		return jose.RS256, nil
	}
	return "", fmt.Errorf("unsupported key type %T", pub)
}

// ParsePrivateKey parses the private key of a PEM block, as mcpguard
// proxy's assertion.key_file holds it: "PRIVATE KEY" (PKCS #8), "EC
// PRIVATE KEY" (SEC 1) or "RSA PRIVATE KEY" (PKCS #1), a signing key.
func ParsePrivateKey(blk *pem.Block) (crypto.Signer, error) {
	var k any
	var err error
	switch blk.Type {
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(blk.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q; want PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY", blk.Type)
	}
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("not a signing key")
	}
	return s, nil
}
