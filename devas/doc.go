// Package devas is an embedded OAuth 2.1 authorization server for
// DEVELOPMENT AND TESTS ONLY. DO NOT USE IT IN PRODUCTION: it has no user
// authentication (every request is approved for one configured
// development user, or with [Config.AllowLoginHint] for whoever the
// request names), keeps all state in memory, and its signing key lives
// only as long as the process unless you pass one in.
//
// It exists so that an MCP server protected with this module can be run
// and tested end to end with real MCP clients (including the official MCP
// Go SDK client, auth.AuthorizationCodeHandler) without an external
// identity provider:
//
//	as, _ := devas.New(devas.Config{
//		Issuer:    "http://127.0.0.1:9000",
//		Resources: []string{"http://127.0.0.1:8080/mcp"},
//		Scopes:    []string{"tools:read", "tools:write"},
//	})
//	go http.ListenAndServe("127.0.0.1:9000", as)
//
// What it implements, as MCP clients expect (MCP 2025-11-25 and
// 2026-07-28 authorization):
//
//   - RFC 8414 metadata at /.well-known/oauth-authorization-server (with
//     path insertion for an issuer with a path), the same document at the
//     OpenID Connect Discovery locations, built with cimd.ServerMetadata;
//   - the authorization code grant with PKCE S256 only (RFC 7636; "plain"
//     and missing challenges are refused), the resource parameter required
//     and checked against [Config.Resources] (RFC 8707), exact redirect
//     URI matching with any port on loopback IP literals (RFC 8252 §7.3),
//     and iss in every authorization response (RFC 9207; advertised with
//     authorization_response_iss_parameter_supported);
//   - clients from Client ID Metadata Documents (https client_id URLs,
//     resolved by cimd.Resolver), pre-registered clients, and legacy
//     RFC 7591 dynamic registration ([Config.EnableDCR]), kept in memory
//     for [Config.RegistrationTTL] and at most [Config.MaxRegistrations]
//     at once; the scope a client registers or publishes is no ceiling
//     (only a pre-registered client's is), so clients that register with
//     the first challenge's scope can step up;
//   - a consent page (or [Config.AutoApprove]) with CSRF protection, no
//     framing, and the client's host and redirect host shown;
//   - JWT access tokens (RFC 9068: typ at+jwt, aud = the resource,
//     client_id, scope, tenant, jti) signed with a key published at /jwks;
//   - optional refresh tokens with rotation and reuse detection;
//   - DPoP (RFC 9449): a token request with a valid proof gets a token
//     bound to its key (cnf.jkt, token_type DPoP) and a refresh token
//     bound to it; dpop_jkt binds an authorization code to a key (§10);
//     dpop_signing_alg_values_supported in the metadata (§5.1);
//   - the JWT bearer grant (RFC 7523 §2.1) for ID-JAGs of configured
//     enterprise identity providers ([Config.TrustedIdPs], MCP
//     Enterprise-Managed Authorization) and JWTs of configured workload
//     issuers ([Config.TrustedWorkloads], MCP Workload Identity
//     Federation), single use by jti for ID-JAGs (docs/testing.md).
//
// Subject and tenant: tokens are issued for [Config.Subject] in
// [Config.Tenant] ("dev-user", "tenant-a" by default). Tests that need
// several users or tenants set [Config.AllowLoginHint] and add
// login_hint=subject@tenant to the authorization URL; tests in this
// module mint tokens directly through internal/devmint, a user's tests
// with package authtest.
package devas
