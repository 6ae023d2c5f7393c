package devas

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcpguard/mcpguard/validate/dpop"
)

// DPoP-bound tokens (RFC 9449 §5, §6.1, §10). A token request carrying a
// DPoP header gets a token bound to the proof's key: "cnf":{"jkt":…} in
// the access token and token_type "DPoP". Refresh tokens issued with it
// are bound to the same key (§5: required for public clients), so a
// refresh needs a proof by that key. A request without DPoP header gets a
// Bearer token, as before. An authorization request may carry dpop_jkt
// (§10): its code is then exchanged only with a proof by the key of that
// thumbprint (else invalid_grant), so a stolen code is useless without
// the key, as PKCE makes it useless without the verifier.

type jktKey struct{}

// newDPoPVerifier checks token-request proofs on the server's clock.
func newDPoPVerifier(cfg Config) (*dpop.Verifier, error) {
	v, err := dpop.New(dpop.Config{Now: cfg.Now})
	if err != nil {
		return nil, fmt.Errorf("%w: dpop: %w", ErrConfig, err)
	}
	return v, nil
}

// withDPoP checks the DPoP proof of a token request, if any (RFC 9449
// §4.3, with htu the token endpoint), and returns r carrying the key's
// thumbprint. A bad proof is invalid_dpop_proof (§5.1).
func (s *Server) withDPoP(r *http.Request) (*http.Request, *oauthError) {
	proofs := r.Header.Values("DPoP")
	if len(proofs) == 0 {
		return r, nil
	}
	p, err := s.dpop.Verify(r.Context(), dpop.Request{
		Method: r.Method, URI: s.cfg.Issuer + "/token", Proofs: proofs,
	})
	if err != nil {
		s.log.InfoContext(r.Context(), "devas: token: DPoP proof refused", "err", err)
		if errors.Is(err, dpop.Error{Reason: "replay_store"}) {
			return r, &oauthError{"server_error", "could not check the DPoP proof"}
		}
		return r, &oauthError{"invalid_dpop_proof", "the DPoP proof is invalid"}
	}
	return r.WithContext(context.WithValue(r.Context(), jktKey{}, p.JKT)), nil
}

// jktOf returns the proof key thumbprint withDPoP recorded, or "".
func jktOf(r *http.Request) string {
	s, _ := r.Context().Value(jktKey{}).(string)
	return s
}

// bindGrant binds g to the request's DPoP key. A grant already bound (a
// refresh token family) must be presented with a proof of the same key.
func bindGrant(r *http.Request, g *grant) *oauthError {
	jkt := jktOf(r)
	if g.JKT != "" && g.JKT != jkt {
		return &oauthError{"invalid_dpop_proof", "the refresh token is bound to another DPoP key"}
	}
	g.JKT = jkt
	return nil
}

// tokenType is the token_type of a token response (RFC 9449 §5).
func tokenType(g grant) string {
	if g.JKT != "" {
		return "DPoP"
	}
	return "Bearer"
}
