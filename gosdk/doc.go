// Package gosdk connects mcpguard's middleware to the official MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk), in both of its Streamable HTTP
// modes: the default stateful handler (mcp.NewStreamableHTTPHandler(f,
// nil)) and Stateless: true. Import it only with the go-sdk: middleware
// itself never depends on an SDK.
//
//	a, err := gosdk.New(gosdk.Config{Middleware: m})
//	a.Install(server)                    // handlers see the request's principal
//	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
//	mux.Handle("/mcp", a.Handler(h))     // m.Handler around the SDK, with TokenInfo
//
// # What the go-sdk delivers, and what this package adds
//
// In stateful mode a tool handler runs on the session's context, created
// by the session's initialize request: its values are those of that first
// HTTP request, not of the request that called the tool. What the go-sdk
// does hand over per request is req.Extra.TokenInfo, read from the
// context that auth.RequireBearerToken sets (its key is unexported), and it
// refuses a request for a session whose creator's TokenInfo.UserID differs
// (403 "session user mismatch", before reading the body or touching the
// session; GET and DELETE alike).
//
// Sessions are bound to the user that created them by the middleware
// itself ([middleware.SessionConfig]), with or without this package:
// another user's request for a session gets 404 before the go-sdk
// runs. What only this package can do is carry the principal of each
// request into a stateful session. [Adapter.Handler] runs
// [middleware.Middleware.Handler] and then gives the go-sdk, through
// auth.RequireBearerToken, a TokenInfo built from the request's
// [middleware.Principal]: its UserID is
// [middleware.Principal.UserID] (issuer, subject and tenant, or the client
// acting for itself), so the go-sdk's own check agrees with the
// middleware's binding, and a client that registers a new client_id at
// step-up (as the go-sdk client does with dynamic registration) keeps its
// session; Scopes and
// Expiration are the token's; Extra carries the principal ([Principal]
// reads it back). The
// principal is removed from the context the go-sdk sees, so that a
// session never captures the principal of its first request.
// [Adapter.Install] adds a receiving middleware that puts the current
// request's principal back into each handler's context, so
// [middleware.PrincipalFromContext] and [middleware.TenantFromContext] are
// right in both modes; without Install they find no principal (fail
// closed), and handlers must call [Principal] on the request.
//
// In a stateful handler, auth.TokenInfoFromContext(ctx) returns the
// TokenInfo of the session's first request (the go-sdk's context is the
// session's); use req.Extra.TokenInfo, [Principal] or, after Install,
// middleware.PrincipalFromContext.
//
// In stateless mode there is no session to bind; every request's handler
// context derives from the request, and the same TokenInfo reaches
// req.Extra.
//
// # Lists
//
// tools/list, prompts/list, resources/list and resources/templates/list
// answers are shown as middleware.Config.Lists says by the middleware
// itself, for every server behind Middleware.Handler (docs/policy.md
// "Lists"); the adapter has no part in it.
package gosdk
