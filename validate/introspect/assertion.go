package introspect

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcpguard/mcpguard/internal/keyalg"
	"math/big"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// clientAssertionType is the client_assertion_type of RFC 7523 §2.2.
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// minRSABits is the smallest RSA key accepted for client assertions
// (RFC 7518 §3.3: 2048 bits or larger).
const minRSABits = 2048

var (
	errKeyType = errors.New("key is not ECDSA P-256/384/521, RSA or Ed25519")
	errKeyAlg  = errors.New("algorithm does not fit the key")
)

// checkKey reports whether alg can be used with pub.
func checkKey(pub crypto.PublicKey, alg jose.SignatureAlgorithm) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if alg == "" || alg != keyalg.Default(k) {
			return errKeyAlg
		}
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return fmt.Errorf("RSA key shorter than %d bits", minRSABits)
		}
		if _, ok := rsaHash(alg); !ok {
			return errKeyAlg
		}
	case ed25519.PublicKey:
		if alg != jose.EdDSA {
			return errKeyAlg
		}
	default:
		return errKeyType
	}
	return nil
}

// rsaHash returns the hash of an RSA JWS algorithm (RFC 7518 §3.3, §3.5).
func rsaHash(alg jose.SignatureAlgorithm) (crypto.Hash, bool) {
	switch alg {
	case jose.RS256, jose.PS256:
		return crypto.SHA256, true
	case jose.RS384, jose.PS384:
		return crypto.SHA384, true
	case jose.RS512, jose.PS512:
		return crypto.SHA512, true
	}
	return 0, false
}

// keySigner adapts any crypto.Signer (an in-memory key, an HSM, a KMS) to
// go-jose's OpaqueSigner. It produces JWS signatures in the encodings of
// RFC 7518 §3: ECDSA as fixed-size R||S, not the ASN.1 DER that
// crypto.Signer returns.
type keySigner struct {
	key crypto.Signer
	alg jose.SignatureAlgorithm
	kid string
}

var _ jose.OpaqueSigner = keySigner{}

func (k keySigner) Public() *jose.JSONWebKey {
	return &jose.JSONWebKey{Key: k.key.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

func (k keySigner) Algs() []jose.SignatureAlgorithm { return []jose.SignatureAlgorithm{k.alg} }

func (k keySigner) SignPayload(payload []byte, alg jose.SignatureAlgorithm) ([]byte, error) {
	if alg != k.alg {
		return nil, jose.ErrUnsupportedAlgorithm
	}
	if alg == jose.EdDSA {
		return k.key.Sign(rand.Reader, payload, crypto.Hash(0))
	}
	var h crypto.Hash
	switch alg {
	case jose.ES256:
		h = crypto.SHA256
	case jose.ES384:
		h = crypto.SHA384
	case jose.ES512:
		h = crypto.SHA512
	default:
		var ok bool
		if h, ok = rsaHash(alg); !ok {
			return nil, jose.ErrUnsupportedAlgorithm
		}
	}
	var opts crypto.SignerOpts = h
	if alg == jose.PS256 || alg == jose.PS384 || alg == jose.PS512 {
		opts = &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: h}
	}
	d := h.New()
	d.Write(payload)
	sig, err := k.key.Sign(rand.Reader, d.Sum(nil), opts)
	if err != nil {
		return nil, err
	}
	pub, ok := k.key.Public().(*ecdsa.PublicKey)
	if !ok {
		return sig, nil
	}
	return ecdsaRaw(sig, (pub.Curve.Params().BitSize+7)/8)
}

// ecdsaRaw converts an ASN.1 DER ECDSA signature to R||S, each size bytes
// (RFC 7518 §3.4).
func ecdsaRaw(der []byte, size int) ([]byte, error) {
	var rs struct{ R, S *big.Int }
	rest, err := asn1.Unmarshal(der, &rs)
	if err != nil || len(rest) != 0 || rs.R.Sign() <= 0 || rs.S.Sign() <= 0 ||
		rs.R.BitLen() > size*8 || rs.S.BitLen() > size*8 {
		return nil, errors.New("introspect: signer returned an invalid ECDSA signature")
	}
	out := make([]byte, 2*size)
	rs.R.FillBytes(out[:size])
	rs.S.FillBytes(out[size:])
	return out, nil
}

// newAssertionSigner returns the go-jose signer for client assertions.
func newAssertionSigner(c Config) (jose.Signer, error) {
	ks := keySigner{key: c.PrivateKey, alg: c.Algorithm, kid: c.KeyID}
	return jose.NewSigner(jose.SigningKey{Algorithm: c.Algorithm, Key: ks}, (&jose.SignerOptions{}).WithType("JWT"))
}

// assertion returns a client assertion (RFC 7523 §3) for audience at now.
func (i *Introspector) assertion(audience string, now time.Time) (string, error) {
	var jti [16]byte
	if _, err := rand.Read(jti[:]); err != nil {
		return "", err
	}
	claims, err := json.Marshal(map[string]any{
		"iss": i.cfg.ClientID,
		"sub": i.cfg.ClientID,
		"aud": audience,
		"jti": base64.RawURLEncoding.EncodeToString(jti[:]),
		"iat": now.Unix(),
		"exp": now.Add(assertionLifetime).Unix(),
	})
	if err != nil {
		return "", err
	}
	jws, err := i.signer.Sign(claims)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}
