// Package keyalg names the JWS algorithm of a key: the default of a
// public key, the one rule that the module's two signers of client
// assertions (client and validate/introspect, private_key_jwt) share
// (Default), and mcpguard proxy's assertion key rule with its PEM private
// key reading, which the proxy and the audit share (Assertion,
// ParsePrivateKey).
package keyalg

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"

	"github.com/go-jose/go-jose/v4"
)

// Default returns the JWS algorithm (RFC 7518 §3.1, RFC 8037 §3.1) a key
// signs with when none is configured: ES256, ES384 or ES512 by the curve
// of an ECDSA key, RS256 for any RSA key (callers check its size), EdDSA
// for an Ed25519 key, and "" for anything else.
func Default(pub crypto.PublicKey) jose.SignatureAlgorithm {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256
		case elliptic.P384():
			return jose.ES384
		case elliptic.P521():
			return jose.ES512
		}
	case *rsa.PublicKey:
		return jose.RS256
	case ed25519.PublicKey:
		return jose.EdDSA
	}
	return ""
}
