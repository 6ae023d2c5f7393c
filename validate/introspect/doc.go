// Package introspect validates OAuth 2.0 access tokens with token
// introspection (RFC 7662), for resource servers whose authorization
// server issues opaque tokens, or whose tokens must be revocable before
// they expire. It checks an introspection response as strictly as package
// validate checks a JWT, and returns the same [validate.Claims], so an
// [Introspector] (or a [Hybrid] of JWT and introspection) plugs into
// middleware.Config.Validator unchanged.
//
// The happy path is three lines:
//
//	in, err := introspect.New(introspect.Config{
//		Issuer:       "https://as.example.com", // introspection_endpoint is discovered
//		Audiences:    []string{"https://mcp.example.com/mcp"},
//		ClientID:     "mcp-server",
//		ClientSecret: secret,
//	})
//	claims, err := in.Validate(ctx, bearerToken)
//	ok := claims.HasScope("tools:call")
//
// # What is checked
//
// The request is a POST of token and token_type_hint=access_token with
// client authentication (Config.AuthMethod); redirects are never followed and
// the response must be 200 with a JSON media type within Config.MaxBytes
// and Config.Timeout. The response must be a JSON object, read by the
// module's one strict JSON reader (valid UTF-8, unique member names, no
// case variants of the members read), whose "active" is the JSON boolean
// true. "exp" and "sub" are required (the latter relaxed by the named
// AllowMissingSubject, as for JWTs); "aud" is required and must contain a
// configured audience, unless the named relaxation AllowMissingAudience
// is set and "aud" is absent; "iss", when present, must equal
// Config.Issuer; "nbf" and "iat" are checked when present; "token_type",
// when present, must be Bearer; a "cnf" member (a sender-constrained
// token, RFC 9449 or RFC 8705) is refused with
// validate.Error{Reason: "sender_constrained"}, unless AllowConfirmation is set by a
// caller that checks the proof of possession itself, and then only a DPoP
// confirmation {"jkt": …} is accepted (with "token_type" "DPoP" allowed),
// filling Claims.Confirmation. "scope", "sub", "client_id", "jti" and
// Config.TenantClaim fill [validate.Claims], and
// [validate.Claims.Decode] reads the whole response.
//
// # Errors and HTTP answers
//
// Every error wraps a validate sentinel, which middleware maps to an HTTP
// answer: an endpoint that cannot be reached, times out, redirects,
// answers 429, 5xx or another unexpected status, sends a non-JSON media
// type or an oversized body wraps [validate.ErrKeysUnavailable] (and
// [ErrEndpoint]): 503 with Retry-After, never an accepted token. A 401 or
// 403 from the endpoint, or a 400 whose error is invalid_client or
// unauthorized_client (RFC 6749 §5.2), means it refused this resource
// server's own credentials; that also wraps ErrKeysUnavailable (and
// [ErrClientAuth]), so clients are not sent to re-authorize for a
// server-side misconfiguration, and it is logged at Error level. Any other
// 400, or a 413, is an answer about the token itself (invalid_request,
// unsupported_token_type, no error code, too large): [ErrRefused] with
// [validate.Error] "inactive", a 401 invalid_token logged at Debug only, so that
// junk tokens cannot raise outage alarms. Everything else, inactive tokens
// and malformed responses included, is a 401 invalid_token. docs/introspection.md
// has the full table.
//
// The access token of "bearer" comes from a [TokenSource], which,
// unlike oauth2.TokenSource, takes the introspection request's context
// (golang/oauth2#262); [ClientCredentials] obtains and caches one with the
// client credentials grant.
//
// This package imports no middleware.
package introspect
