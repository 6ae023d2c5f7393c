package dpop

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpguard/mcpguard/internal/jws"
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Verifier checks DPoP proofs (RFC 9449 §4.3). Create it with [New]; it is
// safe for concurrent use.
type Verifier struct {
	cfg   Config
	algs  []jose.SignatureAlgorithm
	names []string
	json  strictjson.Pool // proof reads reuse the tokenizer (json.go)
}

// New checks cfg and returns a Verifier. It returns an error wrapping
// [ErrConfig] for an empty or non-asymmetric Algorithms list, a negative
// duration or size, or a NonceSecret that is too short.
func New(cfg Config) (*Verifier, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	v := &Verifier{cfg: cfg, algs: cfg.Algorithms}
	for _, a := range cfg.Algorithms {
		v.names = append(v.names, string(a))
	}
	return v, nil
}

// Algorithms returns the accepted "alg" values, in the configured order,
// for the algs challenge parameter and dpop_signing_alg_values_supported.
func (v *Verifier) Algorithms() []string { return slices.Clone(v.names) }

// Request is what a proof is checked against. The caller (the HTTP layer)
// fills it; this package never sees an http.Request.
type Request struct {
	// Method is the request method, compared with "htm" exactly.
	Method string
	// URI is the request's target URI built from the canonical resource
	// identifier (its scheme and authority, never the Host header) and
	// the request path. It must have no query or fragment; it is
	// normalised as "htu" is (RFC 9449 §4.3 normalisation) unless the two are equal.
	URI string
	// AccessToken is the access token the proof accompanies. When set,
	// "ath" must be its hash and JKT must be the proof key's thumbprint.
	// Empty (a token request, RFC 9449 §5) checks neither.
	AccessToken string
	// JKT is the token's cnf.jkt (RFC 9449 §6). With AccessToken set, an
	// empty JKT fails with [Error] "key_binding".
	JKT string
	// Proofs holds the value of every DPoP header field of the request.
	Proofs []string
	// Partition names who the proof's jti is recorded for in the
	// ReplayStore, whose capacity is shared fairly between partitions:
	// the middleware passes the token's principal (issuer, subject,
	// client), so that one principal cannot fill the store for others
	// whatever number of keys it uses. Empty means the proof key's
	// thumbprint.
	Partition string
}

// Proof is a verified proof.
type Proof struct {
	// JKT is the RFC 7638 SHA-256 thumbprint of the proof key,
	// base64url-encoded: the value a token bound to it carries in cnf.jkt.
	JKT string
	// Key is the proof's public key (the "jwk" header).
	Key jose.JSONWebKey
	// Algorithm is the proof's "alg".
	Algorithm jose.SignatureAlgorithm
	// ID is the proof's "jti".
	ID string
	// IssuedAt is the proof's "iat", in UTC.
	IssuedAt time.Time
	// Nonce is the proof's "nonce" (RFC 9449 §4.2), "" if it has none.
	Nonce string
}

// header is the proof's JOSE header (RFC 9449 §4.2).
type header struct {
	Typ  string         `json:"typ"`
	Alg  string         `json:"alg"`
	JWK  jsontext.Value `json:"jwk"`
	Crit jsontext.Value `json:"crit"`
	B64  jsontext.Value `json:"b64"`
}

// claims is the proof's claims set (RFC 9449 §4.2).
type claims struct {
	JTI   string   `json:"jti"`
	HTM   string   `json:"htm"`
	HTU   string   `json:"htu"`
	IAT   *float64 `json:"iat"`
	ATH   *string  `json:"ath"`
	Nonce *string  `json:"nonce"`
}

// privateMembers are the JWK members of private and symmetric keys
// (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2).
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

var b64 = jws.Encoding

// Verify checks req's proof: every check of RFC 9449 §4.3, in its order,
// then the token binding (§6.1), then records the proof's jti in the
// ReplayStore (§11.1) so that it is accepted once. It returns an error
// wrapping one sentinel of errors.go.
func (v *Verifier) Verify(ctx context.Context, req Request) (*Proof, error) {
	switch len(req.Proofs) {
	case 0:
		return nil, errNoProof
	case 1:
	default:
		return nil, errMultipleProofs
	}
	raw := req.Proofs[0]
	if len(raw) > v.cfg.MaxProofBytes {
		return nil, errTooLarge
	}
	now := v.cfg.Now()
	p, c, err := v.verifySignature(raw)
	if err != nil {
		return nil, err
	}
	if err := v.checkClaims(&req, c, now, p); err != nil {
		return nil, err
	}
	if req.AccessToken != "" {
		if req.JKT == "" || subtle.ConstantTimeCompare([]byte(req.JKT), []byte(p.JKT)) != 1 {
			return nil, errKeyBinding
		}
	}
	sum := sha256.Sum256([]byte(p.JKT + "\x00" + p.ID))
	// The jti is kept until the proof stops being acceptable on this
	// clock (iat + Window, inclusive), plus the margin for replicas' clocks.
	ttl := p.IssuedAt.Add(v.cfg.Window).Sub(now) + time.Nanosecond + v.cfg.ReplayMargin
	part := req.Partition
	if part == "" {
		part = "jkt:" + p.JKT
	}
	fresh, err := v.cfg.ReplayStore.Claim(ctx, part, "dpop:"+b64.EncodeToString(sum[:]), ttl)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errReplayStore, err)
	}
	if !fresh {
		return nil, errReplay
	}
	return p, nil
}

// verifySignature runs §4.3 checks 2 to 7 and returns the proof with its
// key and the decoded claims.
func (v *Verifier) verifySignature(raw string) (*Proof, *claims, error) {
	// The one JWS verifier of the module (internal/jws, shared with
	// validate): strict split and base64url, the header read here with
	// internal/strictjson, the "jwk" parsed by go-jose, and the signature
	// checked with the standard library (docs/jose.md).
	d1, d2, ok := jws.Split(raw)
	if !ok || d1 == 0 || d2 == d1+1 {
		return nil, nil, errMalformed
	}
	hb, ok1 := decodeSegment(raw[:d1])
	pb, ok2 := decodeSegment(raw[d1+1 : d2])
	sig, ok3 := decodeSegment(raw[d2+1:])
	if !ok1 || !ok2 || !ok3 {
		return nil, nil, errMalformed
	}
	var h header
	if err := v.readJSON(hb, headerNames, &h); err != nil {
		return nil, nil, errMalformed
	}
	if !isProofType(h.Typ) || h.Crit != nil || h.B64 != nil {
		return nil, nil, errType
	}
	alg := jose.SignatureAlgorithm(h.Alg)
	spec, known := jws.LookupAlg(h.Alg)
	if !known || !slices.Contains(v.algs, alg) {
		return nil, nil, errAlgorithm
	}
	if len(sig) == 0 {
		return nil, nil, errMalformed
	}
	if err := v.checkJWKMembers(h.JWK); err != nil {
		return nil, nil, err
	}
	var key jose.JSONWebKey
	if key.UnmarshalJSON(h.JWK) != nil || !key.Valid() || !key.IsPublic() {
		return nil, nil, errKey
	}
	pub, fits := jws.UsableKey(&key, &spec, "")
	if !fits {
		return nil, nil, errKey
	}
	if !jws.Verify(&spec, pub, []byte(raw[:d2]), sig, nil) {
		return nil, nil, errSignature
	}
	var c claims
	if err := v.readJSON(pb, claimNames, &c); err != nil {
		return nil, nil, errMalformed
	}
	tp, err := key.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, nil, errKey
	}
	return &Proof{JKT: b64.EncodeToString(tp), Key: key, Algorithm: alg, ID: c.JTI}, &c, nil
}

// decodeSegment decodes one strict base64url segment of a proof.
func decodeSegment(s string) ([]byte, bool) {
	return jws.Decode(make([]byte, jws.Encoding.DecodedLen(len(s))), []byte(s))
}

// checkClaims runs §4.3 checks 3 and 8 to 12 on verified claims.
func (v *Verifier) checkClaims(req *Request, c *claims, now time.Time, p *Proof) error {
	if c.JTI == "" || c.HTM == "" || c.HTU == "" || c.IAT == nil {
		return errMalformed
	}
	iat := *c.IAT
	if math.IsNaN(iat) || iat < 0 || iat > 253402300799 { // the end of year 9999
		return errMalformed
	}
	if c.HTM != req.Method {
		return errMethod
	}
	if c.HTU != req.URI { // equal strings need no normalisation
		htu, ok := normalizeURI(c.HTU)
		target, ok2 := normalizeURI(req.URI)
		if !ok || !ok2 || htu != target {
			return errURI
		}
	}
	if v.cfg.NonceSecret != nil && (c.Nonce == nil || !v.nonceOK(*c.Nonce, now)) {
		return errUseNonce
	}
	if c.Nonce != nil {
		p.Nonce = *c.Nonce
	}
	sec, frac := math.Modf(iat)
	p.IssuedAt = time.Unix(int64(sec), int64(frac*1e9)).UTC()
	if d := now.Sub(p.IssuedAt); d > v.cfg.Window || d < -v.cfg.Window {
		return errIssuedAt
	}
	if req.AccessToken != "" {
		sum := sha256.Sum256([]byte(req.AccessToken))
		if c.ATH == nil || subtle.ConstantTimeCompare([]byte(*c.ATH), []byte(b64.EncodeToString(sum[:]))) != 1 {
			return errAccessTokenHash
		}
	}
	return nil
}

// isProofType reports whether typ is "dpop+jwt" (RFC 9449 §4.2), as a
// media type: case-insensitive, with or without "application/" (RFC 7515
// §4.1.9).
func isProofType(typ string) bool {
	if len(typ) > len("application/") && strings.EqualFold(typ[:len("application/")], "application/") {
		typ = typ[len("application/"):]
	}
	return strings.EqualFold(typ, "dpop+jwt")
}

// checkJWKMembers checks the raw "jwk" header (§4.3 check 7) before any
// key is built from it: present, a JSON object, and without the members
// of private or symmetric keys.
func (v *Verifier) checkJWKMembers(raw jsontext.Value) error {
	if raw == nil {
		return errMalformed
	}
	var members map[string]jsontext.Value
	if err := v.readJSON(raw, jwkNames, &members); err != nil {
		return errKey
	}
	for _, m := range privateMembers {
		if _, ok := members[m]; ok {
			return errKey
		}
	}
	return nil
}
