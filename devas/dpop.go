package devas

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/mcpguard/mcpguard/internal/devmint"
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

// confirmation is the access token's "cnf" claim (RFC 7800, RFC 9449 §6.1).
type confirmation struct {
	JKT string `json:"jkt"`
}

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

// issueBoundToken is [Server.issueToken] for a token bound to the DPoP key
// whose RFC 7638 thumbprint is jkt (cnf.jkt, RFC 9449 §6.1), for tests.
func (s *Server) issueBoundToken(jkt, subject, tenant, clientID, resource string, scopes []string) (string, error) {
	if jkt == "" || len(jkt) > maxParamBytes {
		return "", fmt.Errorf("%w: jkt is required", devmint.ErrInvalidArgument)
	}
	if _, err := s.issueToken(subject, tenant, clientID, resource, scopes); err != nil { // the same checks
		return "", err
	}
	tok, _, err := s.mint(grant{ClientID: clientID, Subject: subject, Tenant: tenant, Resource: resource, Scopes: slices.Clone(scopes), JKT: jkt})
	return tok, err
}
