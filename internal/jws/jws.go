// Package jws is the module's one JWS (RFC 7515) signature verifier, shared
// by access tokens (validate) and DPoP proofs (validate/dpop): the strict
// compact serialization split, the algorithm table, the key-to-algorithm
// match and the signature check with the standard library's crypto. JSON
// is read by the callers (internal/strictjson) and JWKs are parsed by
// go-jose (jose.JSONWebKey); docs/jose.md says why and gives the figures.
package jws

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"math/big"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// Key-size limits for RSA verification keys. Smaller keys are too weak
// (RFC 7518 §3.3 requires 2048 bits); larger ones make each verification a
// denial-of-service lever.
const (
	MinRSABits = 2048
	MaxRSABits = 8192
)

// Ed25519 is the fully specified JWS algorithm name of RFC 9864 §2.2:
// EdDSA with the Ed25519 curve only. It verifies exactly as "EdDSA" does
// on an Ed25519 key (RFC 8037 §3.1); go-jose v4.1 has no constant for it.
const Ed25519 = jose.SignatureAlgorithm("Ed25519")

type keyKind uint8

const (
	kindRSA keyKind = iota + 1
	kindEC
	kindEd25519
)

// Alg describes one supported JWS algorithm (RFC 7518 §3.1, RFC 8037).
type Alg struct {
	name  jose.SignatureAlgorithm
	kind  keyKind
	hash  crypto.Hash    // zero for EdDSA, which hashes internally
	pss   bool           // RSASSA-PSS rather than PKCS #1 v1.5
	curve elliptic.Curve // for ECDSA
	size  int            // ECDSA coordinate size in bytes (r and s each)
}

// Name returns the algorithm's JWS name.
func (a *Alg) Name() jose.SignatureAlgorithm { return a.name }

// LookupAlg returns the spec of a supported asymmetric algorithm. HMAC,
// "none" and anything unknown are not supported.
func LookupAlg(alg string) (Alg, bool) {
	switch jose.SignatureAlgorithm(alg) {
	case jose.RS256:
		return Alg{name: jose.RS256, kind: kindRSA, hash: crypto.SHA256}, true
	case jose.RS384:
		return Alg{name: jose.RS384, kind: kindRSA, hash: crypto.SHA384}, true
	case jose.RS512:
		return Alg{name: jose.RS512, kind: kindRSA, hash: crypto.SHA512}, true
	case jose.PS256:
		return Alg{name: jose.PS256, kind: kindRSA, hash: crypto.SHA256, pss: true}, true
	case jose.PS384:
		return Alg{name: jose.PS384, kind: kindRSA, hash: crypto.SHA384, pss: true}, true
	case jose.PS512:
		return Alg{name: jose.PS512, kind: kindRSA, hash: crypto.SHA512, pss: true}, true
	case jose.ES256:
		return Alg{name: jose.ES256, kind: kindEC, hash: crypto.SHA256, curve: elliptic.P256(), size: 32}, true
	case jose.ES384:
		return Alg{name: jose.ES384, kind: kindEC, hash: crypto.SHA384, curve: elliptic.P384(), size: 48}, true
	case jose.ES512:
		return Alg{name: jose.ES512, kind: kindEC, hash: crypto.SHA512, curve: elliptic.P521(), size: 66}, true
	case jose.EdDSA:
		return Alg{name: jose.EdDSA, kind: kindEd25519}, true
	case Ed25519:
		return Alg{name: Ed25519, kind: kindEd25519}, true
	}
	return Alg{}, false
}

// UsableKey returns k's public key if k may verify a signature made with
// alg under kid: a signing key ("use" absent or "sig"), whose "alg" is
// absent or names alg, whose kid matches (any kid when kid is empty), and
// whose type, curve and size fit alg. Symmetric, private, opaque and
// unknown key types are never usable. k was parsed, and its key material
// checked, by go-jose (jose.JSONWebKey). For an Ed25519 key, the JWK
// "alg" values "EdDSA" and "Ed25519" (RFC 9864 §2.2) name the same
// algorithm, so either fits a signature of either.
func UsableKey(k *jose.JSONWebKey, alg *Alg, kid string) (crypto.PublicKey, bool) {
	if k.Use != "" && k.Use != "sig" {
		return nil, false
	}
	if k.Algorithm != "" && k.Algorithm != string(alg.name) && !(alg.kind == kindEd25519 && IsEdDSAName(k.Algorithm)) {
		return nil, false
	}
	if kid != "" && k.KeyID != kid {
		return nil, false
	}
	// Return k.Key itself, not pub, to avoid boxing the key again.
	switch pub := k.Key.(type) {
	case *rsa.PublicKey:
		if alg.kind != kindRSA || pub == nil || pub.N == nil {
			return nil, false
		}
		if bits := pub.N.BitLen(); bits < MinRSABits || bits > MaxRSABits {
			return nil, false
		}
		return k.Key, true
	case *ecdsa.PublicKey:
		if alg.kind != kindEC || pub == nil || pub.Curve != alg.curve {
			return nil, false
		}
		return k.Key, true
	case ed25519.PublicKey:
		if alg.kind != kindEd25519 || len(pub) != ed25519.PublicKeySize {
			return nil, false
		}
		return k.Key, true
	}
	return nil, false
}

// IsEdDSAName reports whether a is a JWS name of Ed25519 signatures: the
// polymorphic "EdDSA" (RFC 8037 §3.1) or the fully specified "Ed25519"
// (RFC 9864 §2.2).
func IsEdDSAName(a string) bool {
	return a == string(jose.EdDSA) || a == string(Ed25519)
}

// pssOptions follows RFC 7518 §3.5: the salt is as long as the hash output.
var pssOptions = rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}

// ScratchSize is the scratch space Verify needs: a SHA-512 digest.
const ScratchSize = sha512.Size

// Verify reports whether sig is a valid alg signature of input under pub,
// which UsableKey has already matched to alg. scratch must hold
// ScratchSize bytes (nil allocates them); it saves two allocations per
// signature.
func Verify(alg *Alg, pub crypto.PublicKey, input, sig, scratch []byte) bool {
	if alg.kind == kindEd25519 {
		k, ok := pub.(ed25519.PublicKey)
		return ok && len(sig) == ed25519.SignatureSize && ed25519.Verify(k, input, sig)
	}
	if cap(scratch) < ScratchSize {
		scratch = make([]byte, ScratchSize)
	}
	digest := appendHash(scratch[:0:ScratchSize], alg.hash, input)
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if alg.kind != kindRSA {
			return false
		}
		if alg.pss {
			return rsa.VerifyPSS(k, alg.hash, digest, sig, &pssOptions) == nil
		}
		return rsa.VerifyPKCS1v15(k, alg.hash, digest, sig) == nil
	case *ecdsa.PublicKey:
		// RFC 7518 §3.4: the JWS signature is R || S, each exactly the
		// coordinate size. DER (ASN.1) signatures are refused here.
		if alg.kind != kindEC || len(sig) != 2*alg.size {
			return false
		}
		r := new(big.Int).SetBytes(sig[:alg.size])
		ss := new(big.Int).SetBytes(sig[alg.size:])
		return ecdsa.Verify(k, digest, r, ss)
	}
	return false
}

// PlausibleSignature reports whether sig has a length some usable alg key
// could produce: exactly 2 × the coordinate size for ECDSA (RFC 7518 §3.4),
// 64 bytes for Ed25519, and the modulus size of a 2048- to 8192-bit key
// for RSA.
func PlausibleSignature(alg *Alg, sig []byte) bool {
	switch {
	case alg.kind == kindEd25519:
		return len(sig) == ed25519.SignatureSize
	case alg.size > 0:
		return len(sig) == 2*alg.size
	default:
		return len(sig) >= MinRSABits/8 && len(sig) <= MaxRSABits/8
	}
}

// appendHash appends the h digest of input to dst.
func appendHash(dst []byte, h crypto.Hash, input []byte) []byte {
	switch h {
	case crypto.SHA256:
		d := sha256.Sum256(input)
		return append(dst, d[:]...)
	case crypto.SHA384:
		d := sha512.Sum384(input)
		return append(dst, d[:]...)
	default:
		d := sha512.Sum512(input)
		return append(dst, d[:]...)
	}
}

// SameKey reports whether a and b are the same public key: pointer
// identity first, then value equality, so a key set that was re-fetched
// with the same keys still matches.
func SameKey(a, b crypto.PublicKey) bool {
	switch ka := a.(type) {
	case *rsa.PublicKey:
		kb, ok := b.(*rsa.PublicKey)
		return ok && (ka == kb || ka.Equal(kb))
	case *ecdsa.PublicKey:
		kb, ok := b.(*ecdsa.PublicKey)
		return ok && (ka == kb || ka.Equal(kb))
	case ed25519.PublicKey:
		kb, ok := b.(ed25519.PublicKey)
		return ok && string(ka) == string(kb)
	}
	return false
}

// Split returns the positions of the two dots of a compact JWS (RFC 7515
// §7.1), refusing any other number of dots, which rules out five-segment
// JWE (RFC 7516 §7.1), and line breaks, which encoding/base64 would skip.
// Every other byte outside the base64url alphabet, including "=" and the
// JSON serialization's "{", is refused by [Decode].
func Split(raw string) (d1, d2 int, ok bool) {
	d1 = strings.IndexByte(raw, '.')
	if d1 < 0 {
		return 0, 0, false
	}
	d2 = strings.IndexByte(raw[d1+1:], '.')
	if d2 < 0 {
		return 0, 0, false
	}
	d2 += d1 + 1
	if strings.IndexByte(raw[d2+1:], '.') >= 0 || strings.IndexByte(raw, '\n') >= 0 || strings.IndexByte(raw, '\r') >= 0 {
		return 0, 0, false
	}
	return d1, d2, true
}

// Encoding decodes unpadded base64url strictly: padding, the standard
// alphabet and non-zero trailing bits are all refused (RFC 7515 §2, RFC
// 4648 §3.5), so one JWS has exactly one encoding. Line breaks, which
// encoding/base64 would skip, are refused by [Split] first.
var Encoding = base64.RawURLEncoding.Strict()

// Decode decodes the segment src into dst, which must hold
// Encoding.DecodedLen(len(src)) bytes, and reports whether it is
// canonical unpadded base64url.
func Decode(dst, src []byte) ([]byte, bool) {
	n, err := Encoding.Decode(dst, src)
	if err != nil {
		return nil, false
	}
	return dst[:n], true
}
