// Package devidp is an enterprise identity provider for DEVELOPMENT AND
// TESTS ONLY, the counterpart of devas for MCP Enterprise-Managed
// Authorization and Workload Identity Federation. DO NOT USE IT IN
// PRODUCTION: it authenticates no user (whoever calls [IdP.IDToken] gets
// an ID token for any subject), keeps its key in memory and fetches
// nothing.
//
// It signs ID tokens ([IdP.IDToken]), as single sign-on would have given
// the MCP client, and workload JWTs ([IdP.WorkloadJWT]), as a workload
// platform would; its token endpoint exchanges one of its ID tokens for an
// ID-JAG (RFC 8693; draft-ietf-oauth-identity-assertion-authz-grant
// §4.3): a JWT with header typ oauth-id-jag+jwt and claims iss, sub, aud
// (the requested audience: the MCP authorization server), client_id (the
// client's ID at that server), resource, scope, jti, iat and exp. Trust it
// from devas with its [IdP.PublicKeys]:
//
//	idp, _ := devidp.New(devidp.Config{Issuer: "http://127.0.0.1:9100"})
//	as, _ := devas.New(devas.Config{ /* ... */
//		TrustedIdPs: []devas.TrustedIssuer{{Issuer: idp.Issuer(), Keys: idp.PublicKeys()}},
//	})
//
// Endpoints (mount the IdP at the root of its issuer's origin):
// /.well-known/openid-configuration, /jwks and /token (POST, form-encoded,
// grant_type urn:ietf:params:oauth:grant-type:token-exchange only).
package devidp
