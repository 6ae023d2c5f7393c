package devas

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/cimd"
)

// refreshRecord is an issued refresh token. Spent tokens stay (Used) until
// they expire, so that reuse is detected.
type refreshRecord struct {
	grant
	Family string
	Used   bool
}

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
	if gt == "authorization_code" {
		s.exchangeCode(w, r, p, client)
		return
	}
	s.refreshGrant(w, r, p, client)
}

// authenticateClient identifies and authenticates the client (RFC 6749
// §2.3): client_secret_basic (credentials form-urlencoded, then Basic),
// client_secret_post, or "none" for public clients, which send client_id
// in the body. A public client may also send its client_id as the Basic
// user name with an empty password (golang.org/x/oauth2 tries that first
// when the style is unknown, as the MCP go-sdk does for CIMD clients).
// A client with a secret may use either secret method. Every failure is
// invalid_client with the fixed description of [cimd.OAuthError].
func (s *Server) authenticateClient(ctx context.Context, r *http.Request, p params) (*cimd.Client, *oauthError) {
	invalid := func(why string, err error) (*cimd.Client, *oauthError) {
		s.log.InfoContext(ctx, "devas: token: client authentication failed", "why", why, "err", err)
		return nil, &oauthError{cimd.ExternalErrorCode, cimd.ExternalErrorDescription}
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
	case cimd.AuthMethodNone:
		if secret != "" {
			return invalid("secret sent by a public client", nil)
		}
	case cimd.AuthMethodClientSecretBasic, cimd.AuthMethodClientSecretPost:
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
// tokens issued from it (RFC 6749 §4.1.2).
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
	rec, ok := s.codes.update(key, now, func(c *codeRecord) { c.Used = true })
	badGrant := &oauthError{"invalid_grant", "the authorization code is invalid, expired, spent, or was issued to another client or redirect_uri"}
	switch {
	case !ok:
		s.tokenError(w, r, badGrant)
		return
	case rec.Used:
		s.log.WarnContext(r.Context(), "devas: token: authorization code reused; revoking its refresh tokens", "client_id", rec.ClientID)
		s.revokeFamily(rec.Family)
		s.tokenError(w, r, badGrant)
		return
	case rec.ClientID != client.ClientID, rec.RedirectURI != redirectURI:
		s.tokenError(w, r, badGrant)
		return
	case !verifyPKCE(verifier, rec.Challenge):
		s.tokenError(w, r, &oauthError{"invalid_grant", "code_verifier does not match the code_challenge"})
		return
	}
	if res := p["resource"]; len(res) == 1 && res[0] != rec.Resource {
		s.tokenError(w, r, &oauthError{"invalid_target", "resource differs from the authorization request"})
		return
	}
	family := ""
	if s.allowRefresh(client) {
		family = newJTI()
		s.codes.update(key, now, func(c *codeRecord) { c.Family = family })
	}
	s.issue(w, r, rec.grant, rec.Scopes, family)
}

// refreshGrant is the refresh_token grant (RFC 6749 §6) with rotation:
// the presented token is spent, a new one is issued in the same family,
// and presenting a spent token revokes the family (OAuth 2.1 §4.3.1).
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
	resource := ""
	if res := p["resource"]; len(res) == 1 {
		resource = res[0]
	}
	// check decides the request against a stored token; the token is spent
	// only by a request that passes it.
	check := func(rec *refreshRecord) *oauthError {
		switch {
		case rec.ClientID != client.ClientID:
			return badGrant
		case rec.Used:
			return nil // reuse, handled below
		case resource != "" && resource != rec.Resource:
			return &oauthError{"invalid_target", "resource differs from the original grant"}
		}
		for _, sc := range requested {
			if !slices.Contains(rec.Scopes, sc) {
				return &oauthError{"invalid_scope", "scope exceeds the original grant"}
			}
		}
		return nil
	}
	old, ok := s.refresh.update(hashKey(rt), s.cfg.Now(), func(rec *refreshRecord) {
		if check(rec) == nil {
			rec.Used = true
		}
	})
	if !ok {
		s.tokenError(w, r, badGrant)
		return
	}
	if oerr := check(&old); oerr != nil {
		s.tokenError(w, r, oerr)
		return
	}
	if old.Used {
		s.log.WarnContext(r.Context(), "devas: token: refresh token reused; revoking its family", "client_id", old.ClientID)
		s.revokeFamily(old.Family)
		s.tokenError(w, r, badGrant)
		return
	}
	scopes := old.Scopes
	if len(requested) > 0 {
		scopes = requested
	}
	s.issue(w, r, old.grant, scopes, old.Family)
}

// issue mints an access token for g narrowed to scopes and, when family
// is set, a refresh token for g (with g's full scopes) in that family.
func (s *Server) issue(w http.ResponseWriter, r *http.Request, g grant, scopes []string, family string) {
	ag := g
	ag.Scopes = scopes
	at, _, err := s.mint(ag)
	if err != nil {
		s.log.ErrorContext(r.Context(), "devas: token: mint failed", "err", err)
		writeJSON(w, http.StatusInternalServerError, &oauthError{"server_error", "could not issue a token"})
		return
	}
	resp := tokenResponse{
		AccessToken: at,
		TokenType:   "Bearer",
		ExpiresIn:   int64(s.cfg.TokenTTL.Seconds()),
		Scope:       strings.Join(scopes, " "),
	}
	if family != "" {
		resp.RefreshToken = randomToken()
		now := s.cfg.Now()
		rec := refreshRecord{grant: g, Family: family}
		if err := s.refresh.put(hashKey(resp.RefreshToken), rec, now.Add(s.cfg.RefreshTokenTTL), now); err != nil {
			s.log.WarnContext(r.Context(), "devas: token: refresh token store full; issuing none")
			resp.RefreshToken = ""
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// revokeFamily deletes every refresh token of family.
func (s *Server) revokeFamily(family string) {
	if family == "" {
		return
	}
	s.refresh.deleteFunc(func(rec refreshRecord) bool { return rec.Family == family })
}

// tokenError writes an RFC 6749 §5.2 error: 401 for invalid_client, 400
// otherwise.
func (s *Server) tokenError(w http.ResponseWriter, r *http.Request, e *oauthError) {
	s.log.InfoContext(r.Context(), "devas: token: error response", "error", e.Code, "description", e.Description)
	status := http.StatusBadRequest
	if e.Code == cimd.ExternalErrorCode {
		status = http.StatusUnauthorized
	}
	writeJSON(w, status, e)
}
