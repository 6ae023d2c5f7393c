package middleware

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/challenge"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/dpop"
)

// DPoPPolicy says whether the middleware accepts DPoP-bound access tokens
// (RFC 9449): "Authorization: DPoP <token>" with a DPoP proof header.
type DPoPPolicy int

const (
	// DPoPOff accepts Bearer tokens only, as before DPoP support: a DPoP
	// Authorization header counts as no credentials, and a token with
	// "cnf" is refused (401 invalid_token). The default.
	DPoPOff DPoPPolicy = iota
	// DPoPAllowed accepts both: Bearer tokens without "cnf", and
	// DPoP-bound tokens with a valid proof. Every 401 offers both schemes.
	DPoPAllowed
	// DPoPRequired accepts DPoP-bound tokens with a valid proof only; a
	// Bearer Authorization header counts as no credentials. The metadata
	// publishes dpop_bound_access_tokens_required (RFC 9728 §2).
	DPoPRequired
)

// DPoPConfig configures DPoP (RFC 9449) for a [Middleware].
type DPoPConfig struct {
	// Policy is off (the zero value), allowed or required.
	Policy DPoPPolicy
	// Proof configures the proof checks: the algorithm allow-list
	// (published as dpop_signing_alg_values_supported and in the algs of
	// every DPoP challenge), the iat window (±5 minutes), the replay store
	// (share one between replicas) and server nonces. Proof.Now nil means
	// Config.Now. Ignored when Policy is DPoPOff.
	Proof dpop.Config
}

// Decision reasons of DPoP refusals.
const (
	// reasonDPoPProof: the DPoP proof failed an RFC 9449 §4.3 check
	// (dpop.ErrInvalidProof; 401 DPoP error="invalid_dpop_proof").
	reasonDPoPProof Reason = "dpop_proof"
	// reasonDPoPReplay: the proof's jti was already used (dpop.Error{Reason: "replay"};
	// 401 invalid_dpop_proof).
	reasonDPoPReplay Reason = "dpop_replay"
	// reasonDPoPNonce: the proof lacks a current server nonce
	// (dpop.Error{Reason: "use_nonce"}; 401 DPoP error="use_dpop_nonce" with DPoP-Nonce).
	reasonDPoPNonce Reason = "dpop_nonce"
	// reasonDPoPBinding: the token and the key do not match: the proof key
	// is not the token's cnf.jkt, the token sent with DPoP is not bound,
	// or a bound token was sent as Bearer (401 invalid_token).
	reasonDPoPBinding Reason = "dpop_binding"
	// reasonDPoPStoreUnavailable: the replay store failed
	// (dpop.Error{Reason: "replay_store"}; 503).
	reasonDPoPStoreUnavailable Reason = "dpop_store_unavailable"
)

// errBoundAsBearer: a sender-constrained token (one with "cnf") was
// presented with the Bearer scheme (RFC 9449 §7.2: such a token MUST NOT
// be accepted as a bearer token). Answered 401 invalid_token.
var errBoundAsBearer = errors.New("middleware: sender-constrained token presented as Bearer")

var (
	errBearerNotAccepted = fmt.Errorf("%w: Bearer is not accepted, DPoP is required", errNoToken)
	errDPoPMalformed     = fmt.Errorf("%w: DPoP scheme without one b64token", errMalformedHeader)
)

const (
	descMalformedDPoP = "Malformed DPoP authorization header"
	descInvalidProof  = "The DPoP proof is invalid"
	descUseNonce      = "Resource server requires nonce in DPoP proof"
	bodyInvalidProof  = `{"error":"invalid_dpop_proof"}`
	bodyUseNonce      = `{"error":"use_dpop_nonce"}`
)

// dpopState is the compiled DPoP configuration; nil when DPoP is off.
type dpopState struct {
	policy DPoPPolicy
	v      *dpop.Verifier
	target string // Metadata.Resource without query: the htu of requests to its path
	origin string // its scheme://authority, for other routes (Protect)
	path   string // its escaped path
	algs   string
	// bearer answers requests without the DPoP scheme, dpop those with
	// it; both by kind.
	bearer, dpop           [numKinds]answer
	invalidProof, useNonce answer
}

// newDPoP checks the DPoP configuration and publishes it in c.Metadata
// (RFC 9728 §2). It runs in New before the metadata handler is built.
func newDPoP(c *Config) (*dpopState, error) {
	md := &c.Metadata
	switch c.DPoP.Policy {
	case DPoPOff:
		if md.DPoPSigningAlgValuesSupported != nil || md.DPoPBoundAccessTokensRequired {
			return nil, fmt.Errorf("%w: Metadata announces DPoP but DPoP.Policy is off", errConfig)
		}
		return nil, nil
	case DPoPAllowed, DPoPRequired:
	default:
		return nil, fmt.Errorf("%w: unknown DPoP.Policy", errConfig)
	}
	pc := c.DPoP.Proof
	if pc.Now == nil {
		pc.Now = c.Now
	}
	v, err := dpop.New(pc)
	if err != nil {
		return nil, fmt.Errorf("%w: DPoP.Proof: %w", errConfig, err)
	}
	algs := v.Algorithms()
	switch {
	case md.DPoPSigningAlgValuesSupported == nil:
		md.DPoPSigningAlgValuesSupported = algs
	case !slices.Equal(md.DPoPSigningAlgValuesSupported, algs):
		return nil, fmt.Errorf("%w: Metadata.DPoPSigningAlgValuesSupported differs from DPoP.Proof.Algorithms", errConfig)
	}
	if md.DPoPBoundAccessTokensRequired && c.DPoP.Policy != DPoPRequired {
		return nil, fmt.Errorf("%w: Metadata.DPoPBoundAccessTokensRequired needs DPoP.Policy DPoPRequired", errConfig)
	}
	md.DPoPBoundAccessTokensRequired = c.DPoP.Policy == DPoPRequired
	u, err := url.Parse(md.Resource)
	if err != nil {
		return nil, fmt.Errorf("%w: Metadata: %w", errConfig, err)
	}
	origin := u.Scheme + "://" + u.Host // htu has no query (RFC 9449 §4.2)
	return &dpopState{
		policy: c.DPoP.Policy, v: v, target: origin + u.EscapedPath(),
		origin: origin, path: u.EscapedPath(), algs: strings.Join(algs, " "),
	}, nil
}

// buildDPoPAnswers renders the answer tables of both schemes, after
// buildAnswers.
func (m *Middleware) buildDPoPAnswers(base []string) {
	d := m.dpop
	if d == nil {
		return
	}
	ch := func(scheme string, code challenge.ErrorCode, desc string, scopes []string) string {
		c := challenge.Challenge{
			Scheme: scheme, Realm: m.realm, Error: code, ErrorDescription: desc,
			Scope: scopes, ResourceMetadata: m.metadataURL,
		}
		if scheme == "DPoP" {
			c.Params = map[string]string{"algs": d.algs}
		}
		return c.String()
	}
	type spec struct {
		code   challenge.ErrorCode
		desc   string
		scopes []string
	}
	specs := map[kind]spec{
		kindInvalidToken:    {challenge.InvalidToken, descInvalidToken, base},
		kindNoToken:         {"", "", base},
		kindNoPrincipal:     {"", "", base},
		kindMultipleTokens:  {challenge.InvalidRequest, descMultipleTokens, nil},
		kindMalformedHeader: {challenge.InvalidRequest, descMalformedHeader, nil},
		kindTokenInQuery:    {challenge.InvalidRequest, descTokenInQuery, nil},
	}
	offerBearer, offerDPoP := "\n"+ch("Bearer", "", "", base), "\n"+ch("DPoP", "", "", base)
	d.bearer, d.dpop = m.answers, m.answers
	for k, s := range specs {
		unauthorized := m.answers[k].status == http.StatusUnauthorized
		desc := s.desc
		if k == kindMalformedHeader {
			desc = descMalformedDPoP
		}
		d.dpop[k].challenge = ch("DPoP", s.code, desc, s.scopes)
		if d.policy == DPoPRequired {
			d.bearer[k].challenge = ch("DPoP", s.code, s.desc, s.scopes)
		} else if unauthorized {
			d.bearer[k].challenge += offerDPoP
			d.dpop[k].challenge += offerBearer
		}
	}
	d.invalidProof = answer{http.StatusUnauthorized, ch("DPoP", "invalid_dpop_proof", descInvalidProof, base), "", bodyInvalidProof, m.answers[kindInvalidToken].level}
	d.useNonce = answer{http.StatusUnauthorized, ch("DPoP", "use_dpop_nonce", descUseNonce, base), "", bodyUseNonce, m.answers[kindInvalidToken].level}
	if d.policy == DPoPAllowed {
		d.invalidProof.challenge += offerBearer
		d.useNonce.challenge += offerBearer
	}
}

// credentials returns the access token of r and whether it came with the
// DPoP scheme (RFC 9449 §7.1), under the policy. With DPoP off it is
// bearerToken.
func (m *Middleware) credentials(r *http.Request) (string, bool, error) {
	tok, err := bearerToken(r, !m.syntaxAfterValidation())
	if m.dpop == nil {
		return tok, false, err
	}
	switch {
	case err == nil && m.dpop.policy == DPoPRequired:
		return "", false, errBearerNotAccepted
	case err == nil:
		return tok, false, nil
	case !errors.Is(err, errOtherScheme):
		return "", false, err // token in query, several headers, malformed Bearer
	}
	v := r.Header.Get("Authorization")
	if !hasDPoPScheme(v) {
		return "", false, err
	}
	rest := v[len("DPoP"):]
	tok = strings.TrimLeft(rest, " ")
	if len(tok) == len(rest) || !isB64Token(tok) {
		return "", true, errDPoPMalformed
	}
	return tok, true, nil
}

// hasDPoPScheme reports whether the Authorization value v names the DPoP
// scheme (case-insensitive, RFC 9110 §11.1).
func hasDPoPScheme(v string) bool {
	return len(v) >= 4 && strings.EqualFold(v[:4], "DPoP") && (len(v) == 4 || v[4] == ' ' || v[4] == '\t')
}

// checkDPoP checks the proof of a DPoP request, and that a token bound to
// a key is never accepted as a bearer token (whatever the policy). It
// returns the verified proof of a sender-constrained request, else nil.
func (m *Middleware) checkDPoP(r *http.Request, tok string, isDPoP bool, c *validate.Claims) (*dpop.Proof, error) {
	if !isDPoP {
		if c.Confirmation != nil {
			return nil, errBoundAsBearer
		}
		return nil, nil
	}
	var jkt string
	if c.Confirmation != nil {
		jkt = c.Confirmation.JKT
	}
	p, err := m.dpop.v.Verify(r.Context(), dpop.Request{
		Method: r.Method, URI: m.dpop.targetURI(r), AccessToken: tok, JKT: jkt, Proofs: r.Header.Values("DPoP"),
		Partition: replayPartition(c),
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// replayPartition is the replay-store partition of a token's proofs: its
// user ([Principal.UserID]), so that one user cannot fill the store for
// the others whatever number of keys it binds its tokens to, or of
// clients it acts through.
func replayPartition(c *validate.Claims) string {
	return string(appendUserID(nil, c.Issuer, c.Subject, c.ClientID, c.Tenant))
}

// setNextNonce sends, on the answer to an authenticated DPoP request whose
// proof carried the previous slot's server nonce, the current one in
// DPoP-Nonce (RFC 9449 §9), so that the client's next proof does not
// need a use_dpop_nonce round trip. Nothing is sent otherwise.
func setNextNonce(w http.ResponseWriter, p *Principal) {
	if p.nextNonce != "" {
		w.Header().Set("DPoP-Nonce", p.nextNonce)
	}
}

// targetURI is the target URI a proof's htu must match (RFC 9449 §4.3
// check 9): the canonical resource URI for a request to its path, else
// its scheme and authority followed by the request's path, for routes
// beside the MCP endpoint (Protect). The path is the one the client sent
// (r.RequestURI, which path-stripping routers leave alone); the Host
// header is never used.
func (d *dpopState) targetURI(r *http.Request) string {
	p := r.URL.EscapedPath()
	if r.RequestURI != "" && r.RequestURI != "*" {
		if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
			p = u.EscapedPath()
		}
	}
	if p == d.path {
		return d.target
	}
	return d.origin + p
}

// dpopAnswer picks the answer for err when DPoP is on: the DPoP-specific
// answers, else the answer of kind k for the scheme the request used. With
// nonces on, every 401 carries a fresh DPoP-Nonce (RFC 9449 §9).
func (m *Middleware) dpopAnswer(w http.ResponseWriter, r *http.Request, err error, k kind, reason Reason) (*answer, Reason) {
	d := m.dpop
	tab := &d.bearer
	if hasDPoPScheme(r.Header.Get("Authorization")) {
		tab = &d.dpop
	}
	a := &tab[k]
	switch {
	case errors.Is(err, dpop.Error{Reason: "use_nonce"}):
		a, reason = &d.useNonce, reasonDPoPNonce
	case errors.Is(err, dpop.Error{Reason: "replay"}):
		a, reason = &d.invalidProof, reasonDPoPReplay
	case errors.Is(err, dpop.ErrInvalidProof):
		a, reason = &d.invalidProof, reasonDPoPProof
	case errors.Is(err, dpop.Error{Reason: "key_binding"}), errors.Is(err, errBoundAsBearer):
		a, reason = &tab[kindInvalidToken], reasonDPoPBinding
	case errors.Is(err, dpop.Error{Reason: "replay_store"}):
		a, reason = &tab[kindUnavailable], reasonDPoPStoreUnavailable
	}
	if a.status == http.StatusUnauthorized {
		if n := d.v.Nonce(m.cfg.Now()); n != "" { // "" when nonces are off
			w.Header().Set("DPoP-Nonce", n)
		}
	}
	return a, reason
}

// dpopStepUp turns the Bearer step-up challenge hdr into the DPoP one for
// a DPoP request: a 403 insufficient_scope uses the scheme of the
// request. The Bearer rendering has no extension parameters, so appending
// algs gives exactly the rendering of challenge.Challenge with Params.
func (m *Middleware) dpopStepUp(r *http.Request, hdr string) string {
	if m.dpop == nil || hdr == "" || !hasDPoPScheme(r.Header.Get("Authorization")) {
		return hdr
	}
	return "DPoP" + strings.TrimPrefix(hdr, "Bearer") + `, algs="` + m.dpop.algs + `"`
}

// setChallenges sets the WWW-Authenticate field lines of v, one line per
// challenge; challenges are separated by "\n", which no rendered challenge
// contains.
func setChallenges(h http.Header, v string) {
	if !strings.Contains(v, "\n") {
		h.Set("WWW-Authenticate", v)
		return
	}
	h["Www-Authenticate"] = strings.Split(v, "\n")
}
