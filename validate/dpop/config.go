package dpop

import (
	"fmt"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Defaults applied by [New] to zero-valued [Config] fields.
const (
	// defaultWindow is the accepted distance between a proof's "iat" and
	// now, in either direction: ±5 minutes, as SEP-1932 (DPoP for MCP)
	// specifies.
	defaultWindow = 5 * time.Minute
	// defaultNonceLifetime is the slot length of server nonces.
	defaultNonceLifetime = 5 * time.Minute
	// defaultMaxProofBytes bounds the size of one proof: 8 KiB, enough for
	// an RSA-4096 "jwk" and signature.
	defaultMaxProofBytes = 8192
	// minNonceSecretBytes is the shortest Config.NonceSecret accepted.
	minNonceSecretBytes = 32
	// defaultReplayMargin is Config.ReplayMargin when a ReplayStore is
	// given: one minute of clock difference between replicas.
	defaultReplayMargin = time.Minute
)

// defaultAlgorithms is the allow-list used when Config.Algorithms is nil:
// the asymmetric JWS algorithms of RFC 7518 §3.1 and RFC 8037 §3.1. It
// returns a new slice on each call.
func defaultAlgorithms() []jose.SignatureAlgorithm {
	return []jose.SignatureAlgorithm{
		jose.ES256, jose.ES384, jose.ES512,
		jose.PS256, jose.PS384, jose.PS512,
		jose.RS256, jose.RS384, jose.RS512,
		jose.EdDSA,
	}
}

// Config configures a [Verifier]. [New] copies it. No zero value disables
// a check.
type Config struct {
	// Algorithms is the allow-list of proof "alg" values (RFC 9449 §4.3
	// check 5), published as dpop_signing_alg_values_supported (RFC 9728
	// §2) and in the algs of the DPoP challenge (§7.1), in this order. Nil
	// means ES256, ES384, ES512, PS256, PS384, PS512, RS256, RS384, RS512 and EdDSA. "none" and the HMAC algorithms are
	// refused by New.
	Algorithms []jose.SignatureAlgorithm

	// Window is how far a proof's "iat" may be from now, before or after
	// (§4.3 check 11). Zero means ±5 minutes; the jti of
	// an accepted proof is remembered for as long as the proof stays
	// acceptable.
	Window time.Duration

	// ReplayStore remembers used proofs (§11.1). Nil means a new
	// [NewMemoryReplayStore] of 100000 entries for this Verifier alone;
	// replicas must share a store (the Redis one, or one in-memory store
	// for several Verifiers in a process) for a replay to be refused on
	// every replica.
	ReplayStore ReplayStore

	// ReplayMargin is how long a used jti is kept beyond the moment its
	// proof stops being acceptable on this Verifier's clock (iat +
	// Window), to cover clock differences between replicas that share
	// ReplayStore: set it to the largest difference. Zero means
	// 1 minute when ReplayStore is set, and none when it is
	// nil (the default store lives in this process, on this clock), so
	// that a proof dated at the end of the window keeps its entry no
	// longer than it can be accepted: 2×Window at most. Negative values
	// are refused.
	ReplayMargin time.Duration

	// NonceSecret, if set, makes server nonces (§9) required: every proof
	// must carry the "nonce" of [Verifier.Nonce], else [Error] "use_nonce". At
	// least 32 random bytes; give every replica the
	// same secret. Nil means no nonces.
	NonceSecret []byte
	// NonceLifetime is the slot length of nonces; a nonce is accepted in
	// its slot and the next. Zero means 5 minutes.
	NonceLifetime time.Duration

	// MaxProofBytes bounds a proof's length, checked before any decoding.
	// Zero means 8192 bytes.
	MaxProofBytes int

	// Now returns the current time for iat and nonces. Nil means time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Algorithms == nil {
		c.Algorithms = defaultAlgorithms()
	} else {
		c.Algorithms = slices.Clone(c.Algorithms)
	}
	if c.Window == 0 {
		c.Window = defaultWindow
	}
	if c.NonceLifetime == 0 {
		c.NonceLifetime = defaultNonceLifetime
	}
	if c.MaxProofBytes == 0 {
		c.MaxProofBytes = defaultMaxProofBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ReplayStore == nil {
		c.ReplayStore = NewMemoryReplayStore(defaultMaxReplayEntries, c.Now)
	} else if c.ReplayMargin == 0 {
		c.ReplayMargin = defaultReplayMargin
	}
	c.NonceSecret = slices.Clone(c.NonceSecret)
	return c
}

func (c Config) check() error {
	if len(c.Algorithms) == 0 {
		return fmt.Errorf("%w: empty Algorithms", ErrConfig)
	}
	for _, a := range c.Algorithms {
		if !asymmetric(a) {
			return fmt.Errorf("%w: algorithm %q is not an asymmetric signature algorithm", ErrConfig, a)
		}
	}
	switch {
	case c.Window < 0:
		return fmt.Errorf("%w: negative Window", ErrConfig)
	case c.NonceLifetime < 0:
		return fmt.Errorf("%w: negative NonceLifetime", ErrConfig)
	case c.ReplayMargin < 0:
		return fmt.Errorf("%w: negative ReplayMargin", ErrConfig)
	case c.MaxProofBytes < 0:
		return fmt.Errorf("%w: negative MaxProofBytes", ErrConfig)
	case c.NonceSecret != nil && len(c.NonceSecret) < minNonceSecretBytes:
		return fmt.Errorf("%w: NonceSecret shorter than %d bytes", ErrConfig, minNonceSecretBytes)
	}
	return nil
}

// asymmetric reports whether a is one of the asymmetric JWS algorithms
// this package can verify.
func asymmetric(a jose.SignatureAlgorithm) bool {
	switch a {
	case jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.PS384, jose.PS512,
		jose.RS256, jose.RS384, jose.RS512, jose.EdDSA:
		return true
	}
	return false
}
