// Package mcpguard protects an MCP server that speaks Streamable HTTP with
// OAuth 2.x access tokens, as the MCP authorization specification
// (revisions 2025-11-25 and 2026-07-28) asks of a resource server. It is
// the front door to the packages that do the work, wired with safe
// defaults:
//
//	g, err := mcpguard.New(mcpguard.Config{
//		Resource: "https://mcp.example.com/mcp",
//		Issuers:  []string{"https://auth.example.com"},
//		Scopes:   []string{"mcp:tools"},
//	})
//	if err != nil { … }
//	defer g.Close()
//	g.Mount(mux, mcpHandler)
//
// With the MCP go-sdk, mcpHandler goes through the gosdk adapter, which
// binds each stateful session to the principal that created it and gives
// every handler the principal of its own request (docs/sdks.md):
//
//	a, err := gosdk.New(gosdk.Config{Middleware: g.Middleware()})
//	if err != nil { … }
//	a.Install(server) // the *mcp.Server
//	g.Mount(mux, a.TokenInfo(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
//
// For mark3labs/mcp-go use the mcpgo adapter; for plain HTTP routes beside
// MCP, middleware.Middleware.Protect.
//
// [Guard.Mount] serves the RFC 9728 protected-resource metadata without a
// token and puts the MCP handler, at the path of Resource, behind the
// middleware. For gorilla/mux and other routers whose Handle method has
// another signature, register [Guard.Routes] yourself.
//
// # What it wires
//
//   - validate/jwks: for each issuer, a key source that discovers the
//     jwks_uri from the issuer's RFC 8414 / OpenID Connect metadata and
//     refreshes the keys in the background without ever blocking a request
//     for long (Config.Keys replaces it, for static keys and tests).
//   - validate: JWT access-token validation (RFC 9068) with the issuers,
//     the audience Resource (RFC 8707), and the validator's defaults.
//   - prm: the protected-resource metadata, with Resource, the issuers as
//     authorization_servers and Scopes as scopes_supported.
//   - middleware: bearer extraction, exact RFC 6750 / RFC 9728 challenges,
//     per-MCP-operation scopes (Config.Operations) with bounded step-up,
//     the MCP 2026-07-28 header checks, and the [middleware.Principal] in
//     the request context ([middleware.PrincipalFromContext]).
//
// The Guard adds no behaviour: every answer is the middleware's, listed in
// docs/answers.md (Every answer a client can see). Every setting of the packages below is reachable
// through the advanced fields of [Config] (Validate, Middleware, JWKS,
// Metadata); the Config documentation says which fields the Guard fills.
// Observability hooks such as middleware Config.OnDecision go in
// Config.Middleware.
//
// Nothing in this module imports this package except examples and tests:
// it sits on top of the layering of docs/DESIGN.md.
package mcpguard
