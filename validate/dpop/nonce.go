package dpop

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// Server nonces (RFC 9449 §9) are stateless: a nonce is the number of the
// time slot it was issued in (Config.NonceLifetime long) followed by an
// HMAC-SHA-256 of that number under Config.NonceSecret, truncated to 128
// bits, base64url-encoded (32 characters). A nonce of the current or the
// previous slot is accepted, so a nonce lives between one and two
// lifetimes. Replicas sharing the secret accept each other's nonces
// without sharing any state; nothing is stored per client.

const (
	nonceRawLen = 8 + 16
	nonceLabel  = "mcpguard dpop nonce v1\x00"
)

// nonceFor returns the nonce of slot.
func (v *Verifier) nonceFor(slot uint64) string {
	var b [nonceRawLen]byte
	binary.BigEndian.PutUint64(b[:8], slot)
	mac := hmac.New(sha256.New, v.cfg.NonceSecret)
	mac.Write([]byte(nonceLabel))
	mac.Write(b[:8])
	copy(b[8:], mac.Sum(nil))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (v *Verifier) slot(now time.Time) uint64 {
	return uint64(now.UnixNano()) / uint64(v.cfg.NonceLifetime)
}

// Nonce returns the nonce to send in the DPoP-Nonce response header at
// now (RFC 9449 §9), or "" when nonces are off (Config.NonceSecret nil).
func (v *Verifier) Nonce(now time.Time) string {
	if v.cfg.NonceSecret == nil {
		return ""
	}
	return v.nonceFor(v.slot(now))
}

// nonceOK reports whether n is the nonce of the current or the previous
// slot.
func (v *Verifier) nonceOK(n string, now time.Time) bool {
	if len(n) != base64.RawURLEncoding.EncodedLen(nonceRawLen) {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(n)
	if err != nil || len(b) != nonceRawLen {
		return false
	}
	got := binary.BigEndian.Uint64(b[:8])
	cur := v.slot(now)
	if got != cur && got+1 != cur {
		return false
	}
	return hmac.Equal([]byte(v.nonceFor(got)), []byte(n))
}

// NextNonce returns the nonce a response to the request that carried p
// should send in DPoP-Nonce (RFC 9449 §9: a server "MAY supply a new nonce
// value to use with the next request" in any response): the current
// slot's nonce when nonces are required and p's is of the previous slot,
// else "" (nothing to send: p's nonce is current, or nonces are off). So
// a client that keeps using the newest DPoP-Nonce it saw never meets a
// use_dpop_nonce 401 while it sends requests at least once a lifetime.
// The check reads the slot number only; the HMAC is computed only when a
// new nonce is due.
func (v *Verifier) NextNonce(p *Proof, now time.Time) string {
	if v.cfg.NonceSecret == nil || p == nil {
		return ""
	}
	var b [nonceRawLen]byte
	if len(p.Nonce) == base64.RawURLEncoding.EncodedLen(nonceRawLen) &&
		base64.RawURLEncoding.Strict().DecodedLen(len(p.Nonce)) == nonceRawLen &&
		decodes(b[:], p.Nonce) && binary.BigEndian.Uint64(b[:8]) == v.slot(now) {
		return ""
	}
	return v.Nonce(now)
}

// decodes reports whether s, of dst's encoded length, decodes into dst.
func decodes(dst []byte, s string) bool {
	n, err := base64.RawURLEncoding.Strict().Decode(dst, []byte(s))
	return err == nil && n == len(dst)
}
