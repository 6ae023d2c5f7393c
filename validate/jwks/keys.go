package jwks

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"slices"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// minRSABits is the smallest RSA modulus accepted (NIST SP 800-131A).
const minRSABits = 2048

// privateMembers are JWK members that carry secret or private key material
// (RFC 7518 §6.3.2, §6.4; RFC 8037 §2; RFC 9964).
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k", "priv"}

// parsedKey is a key that passed every filter, with what the jwkset mirror
// needs besides the go-jose form.
type parsedKey struct {
	jwk jose.JSONWebKey
	ops []string
}

// droppedKey records why a key was not used. warn marks reasons that point
// at a misconfigured or compromised server rather than at keys meant for
// something else.
type droppedKey struct {
	kid, reason string
	warn        bool
}

// keySet is an immutable snapshot; Keys reads it without locking. all
// holds every usable key, with or without a kid, in the set's order: the
// candidates for a token without a kid (RFC 7515 §4.1.4 makes kid
// optional); byKID[""] holds the keys published without one.
type keySet struct {
	byKID map[string][]jose.JSONWebKey
	all   []jose.JSONWebKey
	n     int
}

// parseSet decodes a JWK Set (RFC 7517 §5) and keeps the usable keys. One
// bad key never spoils the others: each member of "keys" is parsed on its
// own. It fails with errInvalidSet when the document is not a JWK Set and
// with errNoUsableKeys when no key survives.
func parseSet(body []byte) (*keySet, []parsedKey, []droppedKey, error) {
	// internal/strictjson is the module's one JSON reader: a set with
	// repeated names (at any depth), a case variant of "keys", or invalid
	// UTF-8 is not a JWK Set, rather than one read in a parser's own way.
	var keysRaw []byte
	err := strictjson.Members(body, []string{"keys"}, func(name, v []byte) error {
		if string(name) == "keys" {
			keysRaw = v
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", errInvalidSet, err)
	}
	keys, ok := strictjson.Elements(keysRaw)
	if !ok {
		return nil, nil, nil, fmt.Errorf("%w: no \"keys\" array", errInvalidSet)
	}
	var (
		good    []parsedKey
		dropped []droppedKey
	)
	for _, raw := range keys {
		pk, d := parseKey(raw)
		if d != nil {
			dropped = append(dropped, *d)
			continue
		}
		good = append(good, pk)
	}
	if len(good) == 0 {
		return nil, nil, dropped, fmt.Errorf("%w: %d keys, none usable", errNoUsableKeys, len(keys))
	}
	set := &keySet{byKID: make(map[string][]jose.JSONWebKey, len(good)), all: make([]jose.JSONWebKey, 0, len(good)), n: len(good)}
	for _, pk := range good {
		set.byKID[pk.jwk.KeyID] = append(set.byKID[pk.jwk.KeyID], pk.jwk)
		set.all = append(set.all, pk.jwk)
	}
	for kid, ks := range set.byKID {
		set.byKID[kid] = slices.Clip(ks) // an append by a caller must not write into the snapshot
	}
	return set, good, dropped, nil
}

// parseKey parses and filters one JWK. Private and symmetric members are
// detected before go-jose sees the key, so secret material is never parsed.
func parseKey(raw []byte) (parsedKey, *droppedKey) {
	var meta struct {
		Kty, Kid, Use, Alg string
		KeyOps             *[]string
	}
	members := map[string]bool{}
	read := append([]string{"kty", "kid", "use", "alg", "key_ops"}, privateMembers...)
	var bad string
	err := strictjson.Members(raw, read, func(name, v []byte) error {
		members[string(name)] = true
		var dst *string
		switch string(name) {
		case "kty":
			dst = &meta.Kty
		case "kid":
			dst = &meta.Kid
		case "use":
			dst = &meta.Use
		case "alg":
			dst = &meta.Alg
		case "key_ops":
			if string(v) == "null" {
				return nil
			}
			ops, ok := strictjson.Strings(v)
			if !ok {
				bad = "key_ops"
			}
			meta.KeyOps = &ops
		}
		if dst != nil && string(v) != "null" {
			var ok bool
			if *dst, ok = strictjson.String(v); !ok {
				bad = string(name)
			}
		}
		return nil
	})
	if err != nil {
		return parsedKey{}, &droppedKey{reason: "not a JSON object with unique member names", warn: true}
	}
	if bad != "" {
		return parsedKey{}, &droppedKey{reason: "malformed member: " + bad, warn: true}
	}
	c := candidate{kid: meta.Kid, use: meta.Use, alg: meta.Alg}
	if meta.KeyOps != nil {
		c.ops, c.hasOps = *meta.KeyOps, true
	}
	if d := c.checkMeta(); d != nil {
		return parsedKey{}, d
	}
	if meta.Kty == "oct" {
		return parsedKey{}, &droppedKey{kid: c.kid, reason: "symmetric (oct) key"}
	}
	for _, m := range privateMembers {
		if members[m] {
			return parsedKey{}, &droppedKey{kid: c.kid, reason: "private key material published (member " + m + ")", warn: true}
		}
	}
	var jk jose.JSONWebKey
	if err := jk.UnmarshalJSON(raw); err != nil {
		return parsedKey{}, &droppedKey{kid: c.kid, reason: "unparsable: " + err.Error(), warn: true}
	}
	c.key, c.certs = jk.Key, jk.Certificates
	out, d := c.filter()
	if d != nil {
		return parsedKey{}, d
	}
	return parsedKey{jwk: out, ops: c.ops}, nil
}

// candidate is a key from either source (raw JSON or a jwkset.JWK) before
// the shared filters.
type candidate struct {
	kid, use, alg string
	ops           []string
	hasOps        bool
	key           any
	certs         []*x509.Certificate
}

// checkMeta applies the filters that need no key material.
func (c candidate) checkMeta() *droppedKey {
	switch {
	case c.use != "" && c.use != "sig":
		return &droppedKey{kid: c.kid, reason: "use is " + quoteShort(c.use) + ", not sig"}
	case c.hasOps && !slices.Contains(c.ops, "verify"):
		return &droppedKey{kid: c.kid, reason: "key_ops lacks verify"}
	}
	return nil
}

// filter applies every filter and returns the go-jose key to serve.
func (c candidate) filter() (jose.JSONWebKey, *droppedKey) {
	if d := c.checkMeta(); d != nil {
		return jose.JSONWebKey{}, d
	}
	drop := func(reason string, warn bool) (jose.JSONWebKey, *droppedKey) {
		return jose.JSONWebKey{}, &droppedKey{kid: c.kid, reason: reason, warn: warn}
	}
	switch k := c.key.(type) {
	case *rsa.PublicKey:
		if k.N == nil || k.N.BitLen() < minRSABits {
			return drop("RSA key shorter than 2048 bits", true)
		}
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() && k.Curve != elliptic.P521() {
			return drop("unsupported EC curve", false)
		}
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return drop("malformed Ed25519 key", true)
		}
	case *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey:
		return drop("private key material published", true)
	case []byte:
		return drop("symmetric (oct) key", false)
	default:
		return drop(fmt.Sprintf("unsupported key type %T", c.key), false)
	}
	if c.alg != "" && !algFits(c.alg, c.key) {
		return drop("alg "+quoteShort(c.alg)+" does not fit the key", true)
	}
	return jose.JSONWebKey{Key: c.key, KeyID: c.kid, Algorithm: c.alg, Use: c.use, Certificates: c.certs}, nil
}

// algFits reports whether the JWS algorithm alg (RFC 7518 §3.1, RFC 8037,
// RFC 9864) can be verified with key.
func algFits(alg string, key any) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		switch jose.SignatureAlgorithm(alg) {
		case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
			return true
		}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return alg == string(jose.ES256)
		case elliptic.P384():
			return alg == string(jose.ES384)
		case elliptic.P521():
			return alg == string(jose.ES512)
		}
	case ed25519.PublicKey:
		return alg == string(jose.EdDSA) || alg == "Ed25519"
	}
	return false
}

// quoteShort quotes an untrusted value for a log line, truncated.
func quoteShort(s string) string {
	if len(s) > 32 {
		s = s[:32]
	}
	return fmt.Sprintf("%q", s)
}
