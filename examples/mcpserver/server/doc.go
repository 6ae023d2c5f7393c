// Package server is the MCP server of the mcpguard example: an official
// go-sdk MCP server with three tools, protected by mcpguard's middleware and
// routed with gorilla/mux. examples/mcpserver runs it from the command line;
// the integration tests run it in-process.
//
//	srv, err := server.New(server.Config{
//		Resource:             "http://127.0.0.1:8080/mcp",
//		AuthorizationServers: []string{"http://127.0.0.1:9000"},
//		Validator:            v, // a *validate.Validator for that issuer and audience
//		Scopes:               []string{"mcp:tools"},
//	})
//	http.ListenAndServe("127.0.0.1:8080", srv)
//
// # Routes
//
//   - the path of Config.Resource (e.g. /mcp): the MCP Streamable HTTP
//     endpoint, behind the gosdk adapter (middleware.Middleware.Handler
//     plus the go-sdk's TokenInfo). The go-sdk handler is stateless by
//     default, so both MCP revisions 2025-11-25 (initialize) and
//     2026-07-28 (self-contained requests) are served; Config.Stateful
//     (flag -stateful) uses the go-sdk's default stateful handler instead,
//     with each session bound to the principal that created it.
//   - the RFC 9728 protected-resource metadata at the path-inserted
//     well-known URL (/.well-known/oauth-protected-resource/mcp) and at
//     the root form, outside the protected chain.
//
// Everything else is 404. No URL is ever derived from the request's Host or
// X-Forwarded-* headers: Config.Resource is the only source.
//
// # Tools
//
//   - whoami (base scopes): the authenticated principal, as JSON.
//   - notes_list (notes:read): the notes of the caller's tenant. A tenant
//     argument that differs from the token's tenant is a tool error
//     (isError: true) with no data.
//   - notes_write (notes:write): stores a note under the caller's tenant.
//
// The per-tool scopes are an operation policy of the middleware, so a
// missing scope is an HTTP 403 insufficient_scope challenge before the tool
// runs. Handlers read the caller only from middleware.PrincipalFromContext,
// which the adapter's receiving middleware (gosdk.Adapter.Install) sets to
// the principal of the HTTP request that carried the call, in both modes
// (in a stateful session the go-sdk's own context is the session's, made
// by its initialize request). tools/list offers only the tools the
// caller's token may call.
package server
