package devas

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/cimd"
)

// tokenResponse is the RFC 6749 §5.1 success body.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
}

// handleToken is the token endpoint (RFC 6749 §3.2): POST, form-encoded,
// grant types authorization_code and (with RefreshTokens) refresh_token.
// Every answer has Cache-Control: no-store.
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, errInvalidRequest("the token endpoint requires POST"))
		return
	}
	p, oerr := readForm(w, r)
	if oerr != nil {
		s.tokenError(w, r, oerr)
		return
	}
	if gt, _ := p.get("grant_type", maxParamBytes); gt == grantTypeJWTBearer && s.jwtBearerEnabled() {
		s.handleJWTBearer(w, r, p)
		return
	}
	client, oerr := s.authenticateClient(r.Context(), r, p)
	if oerr != nil {
		if r.Header.Get("Authorization") != "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="devas"`)
		}
		s.tokenError(w, r, oerr)
		return
	}
	gt, oerr := p.require("grant_type", maxParamBytes)
	if oerr != nil {
		s.tokenError(w, r, oerr)
		return
	}
	if gt != "authorization_code" && (gt != "refresh_token" || !s.cfg.RefreshTokens) {
		s.tokenError(w, r, &oauthError{"unsupported_grant_type", "unsupported grant_type"})
		return
	}
	if !slices.Contains(client.GrantTypes, gt) {
		s.tokenError(w, r, &oauthError{"unauthorized_client", "the client may not use this grant type"})
		return
	}
	if r, oerr = s.withDPoP(r); oerr != nil {
		s.tokenError(w, r, oerr)
		return
	}
	if gt == "authorization_code" {
		s.exchangeCode(w, r, p, client)
		return
	}
	s.refreshGrant(w, r, p, client)
}

// handleJWTBearer serves the JWT bearer grant: the client authenticates
// when it identifies itself (always, for an ID-JAG), and may then use the
// grant only if its grant_types list it; a workload needs no client.
func (s *Server) handleJWTBearer(w http.ResponseWriter, r *http.Request, p params) {
	var client *cimd.Client
	if clientPresent(r, p) {
		var oerr *oauthError
		if client, oerr = s.authenticateClient(r.Context(), r, p); oerr != nil {
			if r.Header.Get("Authorization") != "" {
				w.Header().Set("WWW-Authenticate", `Basic realm="devas"`)
			}
			s.tokenError(w, r, oerr)
			return
		}
		if !slices.Contains(client.GrantTypes, grantTypeJWTBearer) {
			s.tokenError(w, r, &oauthError{"unauthorized_client", "the client may not use this grant type"})
			return
		}
	}
	r, oerr := s.withDPoP(r)
	if oerr != nil {
		s.tokenError(w, r, oerr)
		return
	}
	s.jwtBearerGrant(w, r, p, client)
}

// authenticateClient identifies and authenticates the client (RFC 6749
// §2.3): client_secret_basic (credentials form-urlencoded, then Basic),
// client_secret_post, or "none" for public clients, which send client_id
// in the body. A public client may also send its client_id as the Basic
// user name with an empty password (golang.org/x/oauth2 tries that first
// when the style is unknown, as the MCP go-sdk does for CIMD clients).
// A client with a secret may use either secret method. Every failure is
// invalid_client with one fixed description ([errInvalidClient]).
func (s *Server) authenticateClient(ctx context.Context, r *http.Request, p params) (*cimd.Client, *oauthError) {
	invalid := func(why string, err error) (*cimd.Client, *oauthError) {
		s.log.InfoContext(ctx, "devas: token: client authentication failed", "why", why, "err", err)
		return nil, errInvalidClient()
	}
	bodyID, e1 := p.get("client_id", maxURLBytes)
	bodySecret, e2 := p.get("client_secret", maxParamBytes)
	if e1 != nil || e2 != nil {
		return invalid("client_id or client_secret repeated or too long", nil)
	}
	id, secret := bodyID, bodySecret
	if r.Header.Get("Authorization") != "" {
		user, pass, ok := r.BasicAuth()
		if !ok {
			return invalid("malformed authorization header", nil)
		}
		var err1, err2 error
		id, err1 = url.QueryUnescape(user)
		secret, err2 = url.QueryUnescape(pass)
		switch {
		case err1 != nil || err2 != nil:
			return invalid("malformed basic credentials", nil)
		case bodySecret != "":
			return invalid("more than one authentication method", nil)
		case bodyID != "" && bodyID != id:
			return invalid("client_id in body and header differ", nil)
		}
	}
	if id == "" || len(id) > maxURLBytes || len(secret) > maxParamBytes {
		return invalid("no client_id", nil)
	}
	client, err := s.lookup(ctx, id)
	if err != nil {
		return invalid("lookup", err)
	}
	switch client.TokenEndpointAuthMethod {
	case "none":
		if secret != "" {
			return invalid("secret sent by a public client", nil)
		}
	case "client_secret_basic", "client_secret_post":
		if secret == "" {
			return invalid("no secret", nil)
		}
		if err := s.registry.VerifySecret(ctx, id, secret); err != nil {
			return invalid("secret", err)
		}
	default:
		return invalid("unsupported token_endpoint_auth_method", nil)
	}
	return client, nil
}

// exchangeCode is the authorization_code grant (RFC 6749 §4.1.3, RFC 7636
// §4.5, RFC 8707 §2.2). The code is spent on first presentation, even if
// the request then fails; a second presentation revokes the refresh
// tokens issued from it (RFC 6749 §4.1.2), even when it races the first.
func (s *Server) exchangeCode(w http.ResponseWriter, r *http.Request, p params, client *cimd.Client) {
	code, oerr := p.require("code", maxParamBytes)
	if oerr != nil {
		s.tokenError(w, r, oerr)
		return
	}
	verifier, oerr := p.require("code_verifier", maxVerifierLen)
	if oerr != nil {
		s.tokenError(w, r, oerr)
		return
	}
	redirectURI, oerr := p.require("redirect_uri", maxURLBytes)
	if oerr != nil {
		s.tokenError(w, r, oerr)
		return
	}
	if len(p["resource"]) > 1 {
		s.tokenError(w, r, &oauthError{"invalid_target", "exactly one resource is supported"})
		return
	}
	key := hashKey(code)
	now := s.cfg.Now()
	// The refresh token family is chosen before the code is spent, and
	// spending records it in the same update: a replay that sees the code
	// spent always knows which family to revoke, even while this request
	// has not created it yet (the revoked set then makes creation fail).
	family := ""
	if s.allowRefresh(client) {
		family = newJTI()
	}
	rec, ok := s.codes.update(key, now, func(c *codeRecord) {
		if !c.Used {
			c.Used, c.Family = true, family
		}
	})
	badGrant := &oauthError{"invalid_grant", "the authorization code is invalid, expired, spent, or was issued to another client or redirect_uri"}
	switch {
	case !ok:
		s.tokenError(w, r, badGrant)
		return
	case rec.Used:
		s.log.WarnContext(r.Context(), "devas: token: authorization code reused; revoking its refresh tokens", "client_id", rec.ClientID)
		s.refresh.revoke(rec.Family, now.Add(s.cfg.RefreshTokenTTL), now)
		s.tokenError(w, r, badGrant)
		return
	case rec.ClientID != client.ClientID, rec.RedirectURI != redirectURI:
		s.tokenError(w, r, badGrant)
		return
	case !verifyPKCE(verifier, rec.Challenge):
		s.tokenError(w, r, &oauthError{"invalid_grant", "code_verifier does not match the code_challenge"})
		return
	case rec.DPoPJKT != "" && jktOf(r) != rec.DPoPJKT:
		// RFC 9449 §10: the proof key must be the one dpop_jkt named. The
		// code is spent, as after a PKCE mismatch.
		s.tokenError(w, r, &oauthError{"invalid_grant", "the authorization code is bound to another DPoP key (dpop_jkt)"})
		return
	}
	if res := p["resource"]; len(res) == 1 && res[0] != rec.Resource {
		s.tokenError(w, r, &oauthError{"invalid_target", "resource differs from the authorization request"})
		return
	}
	resp, ok := s.accessToken(w, r, rec.grant, rec.Scopes)
	if !ok {
		return
	}
	if family != "" {
		// Stored before anything is sent, so that a replay that won the
		// race leaves the client with nothing.
		rt := newRefreshToken(family)
		rec.grant.JKT = jktOf(r) // refresh tokens are bound to the DPoP key too
		switch err := s.refresh.create(family, rec.grant, hashKey(rt), now.Add(s.cfg.RefreshTokenTTL), now); {
		case err == nil:
			resp.RefreshToken = rt
		case errors.Is(err, errRevoked):
			s.log.WarnContext(r.Context(), "devas: token: authorization code replayed during its exchange; nothing issued", "client_id", rec.ClientID)
			s.tokenError(w, r, badGrant)
			return
		default:
			// The access token alone is a valid answer (RFC 6749 §5.1:
			// refresh_token is optional); the code is spent either way.
			s.log.WarnContext(r.Context(), "devas: token: refresh token store full; issuing none", "client_id", rec.ClientID)
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// refreshGrant is the refresh_token grant (RFC 6749 §6) with rotation:
// the presented token is replaced by a new one in the same family, and
// presenting any earlier token of the family revokes it (OAuth 2.1
// §4.3.1). The presented token stays valid until the answer carrying its
// successor is ready.
func (s *Server) refreshGrant(w http.ResponseWriter, r *http.Request, p params, client *cimd.Client) {
	rt, oerr := p.require("refresh_token", maxParamBytes)
	if oerr != nil {
		s.tokenError(w, r, oerr)
		return
	}
	if len(p["resource"]) > 1 {
		s.tokenError(w, r, &oauthError{"invalid_target", "exactly one resource is supported"})
		return
	}
	raw, oerr := p.get("scope", maxScopeBytes)
	if oerr != nil {
		s.tokenError(w, r, &oauthError{"invalid_scope", "scope too long or repeated"})
		return
	}
	requested, ok := parseScope(raw)
	if !ok {
		s.tokenError(w, r, &oauthError{"invalid_scope", "malformed scope"})
		return
	}
	badGrant := &oauthError{"invalid_grant", "the refresh token is invalid, expired, revoked, or was issued to another client"}
	family, ok := refreshTokenFamily(rt)
	if !ok {
		s.tokenError(w, r, badGrant)
		return
	}
	now := s.cfg.Now()
	fam, ok := s.refresh.get(family, now)
	switch {
	case !ok, fam.ClientID != client.ClientID:
		// Another client presenting it neither spends nor revokes it.
		s.tokenError(w, r, badGrant)
		return
	case subtle.ConstantTimeCompare([]byte(fam.Current), []byte(hashKey(rt))) != 1:
		s.reused(r, family, fam.ClientID, now)
		s.tokenError(w, r, badGrant)
		return
	}
	if res := p["resource"]; len(res) == 1 && res[0] != fam.Resource {
		s.tokenError(w, r, &oauthError{"invalid_target", "resource differs from the original grant"})
		return
	}
	for _, sc := range requested {
		if !slices.Contains(fam.Scopes, sc) {
			s.tokenError(w, r, &oauthError{"invalid_scope", "scope exceeds the original grant"})
			return
		}
	}
	scopes := fam.Scopes
	if len(requested) > 0 {
		scopes = requested
	}
	resp, ok := s.accessToken(w, r, fam.grant, scopes)
	if !ok {
		return
	}
	next := newRefreshToken(family)
	switch err := s.refresh.rotate(family, hashKey(rt), hashKey(next), now.Add(s.cfg.RefreshTokenTTL), now); {
	case err == nil:
	case errors.Is(err, errNotCurrent):
		// Another request rotated the same token first: a second use.
		s.reused(r, family, fam.ClientID, now)
		s.tokenError(w, r, badGrant)
		return
	default:
		s.tokenError(w, r, badGrant)
		return
	}
	resp.RefreshToken = next
	writeJSON(w, http.StatusOK, resp)
}

// reused revokes a family after one of its spent tokens was presented.
func (s *Server) reused(r *http.Request, family, clientID string, now time.Time) {
	s.log.WarnContext(r.Context(), "devas: token: refresh token reused; revoking its family", "client_id", clientID)
	s.refresh.revoke(family, now.Add(s.cfg.RefreshTokenTTL), now)
}

// accessToken mints an access token for g narrowed to scopes. On failure
// it answers server_error itself and returns false.
func (s *Server) accessToken(w http.ResponseWriter, r *http.Request, g grant, scopes []string) (tokenResponse, bool) {
	ag := g
	ag.Scopes = scopes
	if oerr := bindGrant(r, &ag); oerr != nil {
		s.tokenError(w, r, oerr)
		return tokenResponse{}, false
	}
	at, err := s.tokens.Sign(ag)
	if err != nil {
		s.log.ErrorContext(r.Context(), "devas: token: mint failed", "err", err)
		writeJSON(w, http.StatusInternalServerError, &oauthError{"server_error", "could not issue a token"})
		return tokenResponse{}, false
	}
	return tokenResponse{
		AccessToken: at,
		TokenType:   tokenType(ag),
		ExpiresIn:   int64(s.cfg.TokenTTL.Seconds()),
		Scope:       strings.Join(scopes, " "),
	}, true
}

// tokenError writes an RFC 6749 §5.2 error: 401 for invalid_client, 400
// otherwise.
func (s *Server) tokenError(w http.ResponseWriter, r *http.Request, e *oauthError) {
	s.log.InfoContext(r.Context(), "devas: token: error response", "error", e.Code, "description", e.Description)
	status := http.StatusBadRequest
	if e.Code == "invalid_client" {
		status = http.StatusUnauthorized
	}
	writeJSON(w, status, e)
}
