// Package authtest is test support for code that protects MCP servers with
// OAuth 2.x access tokens. It is NOT suitable for use outside of tests: keys
// are generated on the fly, nothing is persisted, and the helpers fail the
// test (or panic) instead of returning errors.
//
// The centre of the package is [Issuer], an in-process authorization server
// on a loopback [net/http/httptest.Server]. It publishes:
//
//   - RFC 8414 metadata and OpenID Connect Discovery 1.0 documents at every
//     well-known URL an MCP client probes, in the MCP order
//     ([Issuer.MetadataURLs]);
//   - a JWKS (RFC 7517) with an ES256, an RS256 and an EdDSA key
//     ([Issuer.JWKSURL]), which can be rotated and tampered with
//     ([Issuer.AddKey], [Issuer.RemoveKey]);
//   - an RFC 7662 introspection endpoint ([Issuer.IntrospectionURL]).
//
// [Issuer.Token] mints RFC 9068 JWT access tokens from a [Token] value whose
// zero value is valid for the issuer, its audience and its clock; each field
// changes one property, and [Expired], [WrongAudience], [WrongIssuer],
// [InsufficientScope], [NoKID] and [AlgNone] return the classic bad tokens.
// [Issuer.SetFault] makes any endpoint misbehave ("hang", "huge",
// "too-many-requests", …; see [Fault]) for fault-tolerance tests, and
// [Issuer.Requests] shows what a client actually fetched. [GenerateKey]
// makes keys to publish or to sign with.
//
// # Time
//
// The issuer never reads the wall clock. [IssuerConfig.Now] defaults to a
// fixed instant, 2026-01-02T03:04:05Z, and [Issuer.Advance] moves it. The
// code under test must use the same clock: pass [Issuer.Now] as its Now
// function (for example validate.Config.Now), or tokens that are valid for
// the issuer will look expired to the validator.
//
// # Testing an MCP server
//
// A typical test of a protected MCP handler looks like this (the validator
// and middleware are mcpguard's validate and middleware packages, which this
// package does not import so that their own tests can use it):
//
//	func TestServerRejectsExpiredToken(t *testing.T) {
//		iss := authtest.NewIssuer(t, authtest.IssuerConfig{
//			Audience: "https://mcp.example.com/mcp",
//		})
//		// Build the validator with Issuer: iss.URL, a JWKS key source for
//		// iss.JWKSURL using iss.Client, Audiences: the same audience and
//		// Now: iss.Now. Wrap the MCP handler with the middleware and start it
//		// with httptest.NewServer.
//
//		req, _ := http.NewRequest("POST", mcpURL, body)
//		req.Header.Set("Authorization", "Bearer "+iss.Token(t, authtest.Expired()))
//		resp, err := http.DefaultClient.Do(req)
//		// assert err == nil, resp.StatusCode == 401 and a Bearer
//		// WWW-Authenticate challenge with error="invalid_token".
//	}
//
// Run the same request with iss.Token(t, authtest.Token{}) to check the
// happy path, with [InsufficientScope] (or Token.Scopes) to check step-up
// (403 insufficient_scope), and with iss.SetFault("unavailable",
// iss.JWKSURL) after adding a new key with [Issuer.AddKey] to check
// behaviour while the authorization server is down.
package authtest
