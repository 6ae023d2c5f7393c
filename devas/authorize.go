package devas

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/cimd"
)

// authzRequest is a validated authorization request.
type authzRequest struct {
	grant
	RedirectURI string
	State       string
	Challenge   string
	DPoPJKT     string // dpop_jkt (RFC 9449 §10): the token request's proof key must have it, or ""
	ClientName  string
	ClientHost  string // host of a client_id URL, "" otherwise
}

// codeRecord is an issued authorization code, bound to its request.
type codeRecord struct {
	authzRequest
	Used   bool
	Family string // refresh token family chosen when the code was spent, if any
}

// handleAuthorize is the authorization endpoint (RFC 6749 §3.1, §4.1.1).
func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	switch r.Method {
	case http.MethodGet:
		s.authorize(w, r)
	case http.MethodPost:
		s.consent(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		s.errorPage(w, r, http.StatusMethodNotAllowed, errInvalidRequest("method not allowed"))
	}
}

// authorize validates an authorization request. Until the client and its
// redirect_uri are verified, errors are shown as a page (RFC 6749
// §4.1.2.1: never redirect to an unverified URI); after, they are
// redirected with error, state and iss.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.RawQuery) > maxQueryBytes {
		s.errorPage(w, r, http.StatusBadRequest, errInvalidRequest("request too large"))
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, errInvalidRequest("malformed query"))
		return
	}
	p := params(q)
	client, redirectURI, oerr := s.verifyClient(r.Context(), p)
	if oerr != nil {
		s.errorPage(w, r, http.StatusBadRequest, oerr)
		return
	}
	state, oerr := p.get("state", maxParamBytes)
	if oerr != nil {
		s.redirectError(w, r, redirectURI, "", oerr)
		return
	}
	req, oerr := s.parseRequest(p, client, redirectURI)
	if oerr != nil {
		s.redirectError(w, r, redirectURI, state, oerr)
		return
	}
	req.State = state
	if s.cfg.AutoApprove {
		s.approve(w, r, req)
		return
	}
	s.showConsent(w, r, req)
}

// verifyClient looks the client up and checks redirect_uri against its
// registration (exact match; any port on loopback IP literals, RFC 8252
// §7.3, per [cimd.Client.RedirectURIAllowed]).
func (s *Server) verifyClient(ctx context.Context, p params) (*cimd.Client, string, *oauthError) {
	clientID, oerr := p.require("client_id", maxURLBytes)
	if oerr != nil {
		return nil, "", oerr
	}
	redirectURI, oerr := p.require("redirect_uri", maxURLBytes)
	if oerr != nil {
		return nil, "", oerr
	}
	client, err := s.lookup(ctx, clientID)
	if err != nil {
		s.log.InfoContext(ctx, "devas: authorize: client lookup failed", "err", err)
		return nil, "", errInvalidClient()
	}
	if !client.RedirectURIAllowed(redirectURI) {
		s.log.InfoContext(ctx, "devas: authorize: redirect_uri not registered", "client_id", clientID)
		return nil, "", errInvalidRequest("redirect_uri is not registered for this client")
	}
	return client, redirectURI, nil
}

// lookup finds a client and fills the effective defaults of RFC 7591 §2
// that cimd leaves empty for pre-registered clients: grant_types
// ["authorization_code"], response_types ["code"] with that grant, and
// token_endpoint_auth_method "none" for a client without a secret
// ("client_secret_basic" with one).
func (s *Server) lookup(ctx context.Context, clientID string) (*cimd.Client, error) {
	c, err := s.registry.Lookup(ctx, clientID)
	if err != nil {
		return nil, err
	}
	if len(c.GrantTypes) == 0 {
		c.GrantTypes = []string{"authorization_code"}
	}
	if c.ResponseTypes == nil && slices.Contains(c.GrantTypes, "authorization_code") {
		c.ResponseTypes = []string{"code"}
	}
	if c.TokenEndpointAuthMethod == "" {
		c.TokenEndpointAuthMethod = "none"
		if len(c.SecretSHA256) > 0 {
			c.TokenEndpointAuthMethod = "client_secret_basic"
		}
	}
	return c, nil
}

// parseRequest checks everything after the client and redirect_uri.
func (s *Server) parseRequest(p params, client *cimd.Client, redirectURI string) (*authzRequest, *oauthError) {
	rt, oerr := p.require("response_type", maxParamBytes)
	if oerr != nil {
		return nil, oerr
	}
	if rt != "code" {
		return nil, &oauthError{"unsupported_response_type", "only response_type=code is supported"}
	}
	if rm, oerr := p.get("response_mode", maxParamBytes); oerr != nil || (rm != "" && rm != "query") {
		return nil, errInvalidRequest("only response_mode=query is supported")
	}
	if !slices.Contains(client.GrantTypes, "authorization_code") || !slices.Contains(client.ResponseTypes, "code") {
		return nil, &oauthError{"unauthorized_client", "the client may not use the authorization code grant"}
	}
	if !slices.Contains(s.methods, client.TokenEndpointAuthMethod) {
		return nil, &oauthError{"unauthorized_client", "the client's token endpoint authentication method is not supported"}
	}
	challenge, oerr := p.get("code_challenge", maxParamBytes)
	if oerr != nil {
		return nil, oerr
	}
	if challenge == "" {
		return nil, errInvalidRequest("code_challenge is required (PKCE)")
	}
	method, oerr := p.get("code_challenge_method", maxParamBytes)
	if oerr != nil || method != "S256" {
		return nil, errInvalidRequest("code_challenge_method must be S256")
	}
	if !validChallenge(challenge) {
		return nil, errInvalidRequest("malformed code_challenge")
	}
	resource, oerr := s.checkResource(p)
	if oerr != nil {
		return nil, oerr
	}
	// RFC 9449 §10: dpop_jkt binds the code to a DPoP key; the thumbprint
	// is a base64url SHA-256 (RFC 7638), so exactly 43 characters.
	jkt, oerr := p.get("dpop_jkt", maxParamBytes)
	if oerr != nil {
		return nil, oerr
	}
	if jkt != "" && !validChallenge(jkt) {
		return nil, errInvalidRequest("malformed dpop_jkt")
	}
	subject, tenant := s.cfg.Subject, s.cfg.Tenant
	if s.cfg.AllowLoginHint {
		hint, oerr := p.get("login_hint", maxParamBytes)
		if oerr != nil {
			return nil, oerr
		}
		if hint != "" {
			var ok bool
			if subject, tenant, ok = parseLoginHint(hint, s.cfg.Tenant); !ok {
				return nil, errInvalidRequest("login_hint must be subject@tenant")
			}
		}
	}
	scopes, oerr := s.grantScopes(p, client, subject)
	if oerr != nil {
		return nil, oerr
	}
	req := &authzRequest{
		grant: grant{
			ClientID: client.ClientID,
			Subject:  subject,
			Tenant:   tenant,
			Resource: resource,
			Scopes:   scopes,
		},
		RedirectURI: redirectURI,
		Challenge:   challenge,
		DPoPJKT:     jkt,
		ClientName:  client.ClientName,
	}
	if client.Source == "cimd" {
		if u, err := url.Parse(client.ClientID); err == nil {
			req.ClientHost = u.Host
		}
	}
	return req, nil
}

// checkResource requires exactly one resource parameter naming one of
// Config.Resources exactly (RFC 8707 §2; MCP: clients MUST send it).
func (s *Server) checkResource(p params) (string, *oauthError) {
	res := p["resource"]
	switch {
	case len(res) == 0 || res[0] == "":
		return "", &oauthError{"invalid_target", "the resource parameter is required"}
	case len(res) > 1:
		return "", &oauthError{"invalid_target", "exactly one resource is supported"}
	case !slices.Contains(s.cfg.Resources, res[0]):
		return "", &oauthError{"invalid_target", "unknown resource"}
	}
	return res[0], nil
}

// grantScopes parses the requested scopes, refuses unknown ones and
// applies Config.GrantScopes. offline_access is kept only when the client
// will get a refresh token.
//
// The registered scope of a client is a ceiling only for a pre-registered
// client ("static": the operator chose it). A dynamically
// registered client or a Client ID Metadata Document asserts its own
// scope, and MCP clients register with the scope of the first 401
// challenge; holding them to it would refuse every step-up (MCP
// authorization, "Scope Selection Strategy") while protecting nothing,
// since the same client could register again with more. Such clients may
// request any scope in Config.Scopes, subject to Config.GrantScopes.
func (s *Server) grantScopes(p params, client *cimd.Client, subject string) ([]string, *oauthError) {
	raw, oerr := p.get("scope", maxScopeBytes)
	if oerr != nil {
		return nil, &oauthError{"invalid_scope", "scope too long or repeated"}
	}
	requested, ok := parseScope(raw)
	if !ok {
		return nil, &oauthError{"invalid_scope", "malformed scope"}
	}
	var allowedByClient []string
	if client.Source == "static" && client.Scope != "" {
		allowedByClient = strings.Fields(client.Scope)
	}
	for _, sc := range requested {
		if !slices.Contains(s.cfg.Scopes, sc) || (allowedByClient != nil && !slices.Contains(allowedByClient, sc)) {
			return nil, &oauthError{"invalid_scope", "a requested scope is not supported"}
		}
	}
	granted := slices.Clone(requested)
	if s.cfg.GrantScopes != nil {
		granted = nil
		for _, sc := range s.cfg.GrantScopes(client.ClientID, subject, slices.Clone(requested)) {
			if slices.Contains(s.cfg.Scopes, sc) && !slices.Contains(granted, sc) {
				granted = append(granted, sc)
			}
		}
	}
	if !s.allowRefresh(client) {
		granted = slices.DeleteFunc(granted, func(sc string) bool { return sc == offlineAccess })
	}
	if len(requested) > 0 && len(granted) == 0 {
		return nil, &oauthError{"access_denied", "none of the requested scopes was granted"}
	}
	return granted, nil
}

// allowRefresh reports whether client gets refresh tokens.
func (s *Server) allowRefresh(client *cimd.Client) bool {
	return s.cfg.RefreshTokens && slices.Contains(client.GrantTypes, "refresh_token")
}

// approve issues a code for req and redirects to the client.
func (s *Server) approve(w http.ResponseWriter, r *http.Request, req *authzRequest) {
	code := randomToken()
	now := s.cfg.Now()
	if err := s.codes.put(hashKey(code), codeRecord{authzRequest: *req}, now.Add(codeTTL), now); err != nil {
		s.log.WarnContext(r.Context(), "devas: authorize: code store full")
		s.redirectError(w, r, req.RedirectURI, req.State, &oauthError{"temporarily_unavailable", "too many pending codes"})
		return
	}
	v := url.Values{"code": {code}}
	if req.State != "" {
		v.Set("state", req.State)
	}
	s.redirect(w, req.RedirectURI, v)
}

// redirectError sends an error authorization response (RFC 6749
// §4.1.2.1) with iss (RFC 9207 §2).
func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, redirectURI, state string, e *oauthError) {
	s.log.InfoContext(r.Context(), "devas: authorize: error response", "error", e.Code, "description", e.Description)
	v := url.Values{"error": {e.Code}, "error_description": {e.Description}}
	if state != "" {
		v.Set("state", state)
	}
	s.redirect(w, redirectURI, v)
}

// redirect sends a 302 to the verified redirectURI with v and iss added
// to its query; the existing query is kept byte for byte.
func (s *Server) redirect(w http.ResponseWriter, redirectURI string, v url.Values) {
	v.Set("iss", s.cfg.Issuer)
	loc := redirectURI
	switch {
	case !strings.Contains(loc, "?"):
		loc += "?"
	case !strings.HasSuffix(loc, "?") && !strings.HasSuffix(loc, "&"):
		loc += "&"
	}
	w.Header().Set("Location", loc+v.Encode())
	w.WriteHeader(http.StatusFound)
}

// noStore marks a response as not cacheable (RFC 6749 §5.1).
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}
