package validate

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"math/big"

	"github.com/go-jose/go-jose/v4"
)

// Key-size limits for RSA verification keys. Smaller keys are too weak
// (RFC 7518 §3.3 requires 2048 bits); larger ones make each verification a
// denial-of-service lever.
const (
	minRSABits = 2048
	maxRSABits = 8192
	// maxCandidateKeys bounds the signature verifications spent on one
	// token (per attempt) when its kid, or the absence of one, maps to
	// several usable keys: beyond it the token is refused untried.
	maxCandidateKeys = 8
)

type keyKind uint8

const (
	kindRSA keyKind = iota + 1
	kindEC
	kindEd25519
)

// Ed25519 is the fully specified JWS algorithm name of RFC 9864 §2.2:
// EdDSA with the Ed25519 curve only. It verifies exactly as "EdDSA" does
// on an Ed25519 key (RFC 8037 §3.1); go-jose v4.1 has no constant for it.
const Ed25519 = jose.SignatureAlgorithm("Ed25519")

// algSpec describes one supported JWS algorithm (RFC 7518 §3.1, RFC 8037).
type algSpec struct {
	name  jose.SignatureAlgorithm
	kind  keyKind
	hash  crypto.Hash    // zero for EdDSA, which hashes internally
	pss   bool           // RSASSA-PSS rather than PKCS #1 v1.5
	curve elliptic.Curve // for ECDSA
	size  int            // ECDSA coordinate size in bytes (r and s each)
}

// lookupAlg returns the spec of a supported asymmetric algorithm. HMAC, "none"
// and anything unknown are not supported.
func lookupAlg(alg string) (algSpec, bool) {
	switch jose.SignatureAlgorithm(alg) {
	case jose.RS256:
		return algSpec{name: jose.RS256, kind: kindRSA, hash: crypto.SHA256}, true
	case jose.RS384:
		return algSpec{name: jose.RS384, kind: kindRSA, hash: crypto.SHA384}, true
	case jose.RS512:
		return algSpec{name: jose.RS512, kind: kindRSA, hash: crypto.SHA512}, true
	case jose.PS256:
		return algSpec{name: jose.PS256, kind: kindRSA, hash: crypto.SHA256, pss: true}, true
	case jose.PS384:
		return algSpec{name: jose.PS384, kind: kindRSA, hash: crypto.SHA384, pss: true}, true
	case jose.PS512:
		return algSpec{name: jose.PS512, kind: kindRSA, hash: crypto.SHA512, pss: true}, true
	case jose.ES256:
		return algSpec{name: jose.ES256, kind: kindEC, hash: crypto.SHA256, curve: elliptic.P256(), size: 32}, true
	case jose.ES384:
		return algSpec{name: jose.ES384, kind: kindEC, hash: crypto.SHA384, curve: elliptic.P384(), size: 48}, true
	case jose.ES512:
		return algSpec{name: jose.ES512, kind: kindEC, hash: crypto.SHA512, curve: elliptic.P521(), size: 66}, true
	case jose.EdDSA:
		return algSpec{name: jose.EdDSA, kind: kindEd25519}, true
	case Ed25519:
		return algSpec{name: Ed25519, kind: kindEd25519}, true
	}
	return algSpec{}, false
}

// usableKey returns k's public key if k may verify a token signed with alg
// under kid: a signing key ("use" absent or "sig"), whose "alg" is absent or
// names alg, whose kid matches (any kid when the token has none), and
// whose type, curve and size fit alg. Symmetric, private, opaque and
// unknown key types are never usable. k was parsed, and its key material
// checked, by go-jose (jose.JSONWebKey). For an Ed25519 key, the JWK
// "alg" values "EdDSA" and "Ed25519" (RFC 9864 §2.2) name the same
// algorithm, so either fits a token of either.
func usableKey(k *jose.JSONWebKey, alg *algSpec, kid string) (crypto.PublicKey, bool) {
	if k.Use != "" && k.Use != "sig" {
		return nil, false
	}
	if k.Algorithm != "" && k.Algorithm != string(alg.name) && !(alg.kind == kindEd25519 && isEdDSAName(k.Algorithm)) {
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
		if bits := pub.N.BitLen(); bits < minRSABits || bits > maxRSABits {
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

// isEdDSAName reports whether a is a JWS name of Ed25519 signatures: the
// polymorphic "EdDSA" (RFC 8037 §3.1) or the fully specified "Ed25519"
// (RFC 9864 §2.2).
func isEdDSAName(a string) bool {
	return a == string(jose.EdDSA) || a == string(Ed25519)
}

// pssOptions follows RFC 7518 §3.5: the salt is as long as the hash output.
var pssOptions = rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}

// scratchSize is the scratch space verifySignature needs: a SHA-512 digest.
const scratchSize = sha512.Size

// verifySignature reports whether sig is a valid alg signature of input
// under pub, which usableKey has already matched to alg. scratch must hold
// scratchSize bytes; it saves two allocations per token.
func verifySignature(alg *algSpec, pub crypto.PublicKey, input, sig, scratch []byte) bool {
	if alg.kind == kindEd25519 {
		k := pub.(ed25519.PublicKey)
		return len(sig) == ed25519.SignatureSize && ed25519.Verify(k, input, sig)
	}
	digest := appendHash(scratch[:0:sha512.Size], alg.hash, input)
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if alg.pss {
			return rsa.VerifyPSS(k, alg.hash, digest, sig, &pssOptions) == nil
		}
		return rsa.VerifyPKCS1v15(k, alg.hash, digest, sig) == nil
	case *ecdsa.PublicKey:
		// RFC 7518 §3.4: the JWS signature is R || S, each exactly the
		// coordinate size. DER (ASN.1) signatures are refused here.
		if len(sig) != 2*alg.size {
			return false
		}
		r := new(big.Int).SetBytes(sig[:alg.size])
		ss := new(big.Int).SetBytes(sig[alg.size:])
		return ecdsa.Verify(k, digest, r, ss)
	}
	return false
}

// plausibleSignature reports whether sig has a length some usable alg key
// could produce: exactly 2 × the coordinate size for ECDSA (RFC 7518 §3.4),
// 64 bytes for Ed25519, and the modulus size of a 2048- to 8192-bit key
// for RSA.
func plausibleSignature(alg *algSpec, sig []byte) bool {
	switch {
	case alg.kind == kindEd25519:
		return len(sig) == ed25519.SignatureSize
	case alg.size > 0:
		return len(sig) == 2*alg.size
	default:
		return len(sig) >= minRSABits/8 && len(sig) <= maxRSABits/8
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

// sameKey reports whether a and b are the same public key: pointer identity
// first, then value equality, so a key set that was re-fetched with the
// same keys still matches.
func sameKey(a, b crypto.PublicKey) bool {
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
