// Package middleware puts OAuth 2.x protected-resource authorization in
// front of an MCP server speaking Streamable HTTP, as the MCP authorization
// specification (revisions 2025-11-25 and 2026-07-28) asks of a resource
// server: RFC 6750 bearer tokens, RFC 9728 protected-resource metadata and
// challenges, per-operation scopes with RFC 6750 §3.1 step-up, and the
// 2026-07-28 request-header checks.
//
// The happy path:
//
//	m, err := middleware.New(middleware.Config{Validator: v, Metadata: md, Scopes: []string{"mcp:tools"}})
//	inserted, root := m.MetadataPaths()
//	mux.Handle(inserted, m.MetadataHandler()) // and root, if it differs
//	mux.Handle("/mcp", m.Handler(mcpHandler))
//
// where v is a *validate.Validator whose audience is md.Resource. Around
// an MCP SDK's handler, use its adapter (packages gosdk and mcpgo beside
// this one): with stateful sessions, m.Handler alone neither binds a
// session to its principal nor, for the go-sdk, gives a handler the
// principal of its own request (docs/sdks.md).
//
// Ordinary HTTP routes beside MCP (REST, webhooks) take
// [Middleware.Protect], which never reads the body as JSON-RPC. Operations
// served without a token are listed in OperationPolicy.Public (read
// [PublicOperations] first); [Middleware.Permits] answers whether a
// principal may call an operation, for filtering lists.
//
// # What a request goes through
//
// [Middleware.Handler] checks, in order: the Origin header (DNS
// rebinding); the bearer token, from the Authorization header only; the
// token, with the [TokenValidator]; for POST, the JSON-RPC message in the
// body (read once, bounded, and replayed byte for byte to the next
// handler); the MCP 2026-07-28 request headers against the body; and the
// scopes of the operation (base scopes, then per method, tool, prompt or
// resource, see [OperationPolicy]), honouring scope hierarchies
// (Config.ScopeImplies). The authenticated [Principal] is then in the
// request context ([PrincipalFromContext]).
//
// Every refusal is a fixed answer: status, WWW-Authenticate challenge
// (rendered once in [New] where possible) and a small JSON body; the
// internal cause goes only to Config.Logger. docs/answers.md ("Every answer a
// client can see") lists them all.
//
// # Scope challenges and the two revisions
//
// A token lacking scopes gets 403 with error="insufficient_scope", every
// scope the operation needs in one challenge, and resource_metadata. For
// requests of MCP 2026-07-28 or later (MCP-Protocol-Version header) the
// list is exactly the operation's scopes. For older or unversioned requests
// it is, by default, the operation's scopes plus the token's granted scopes
// (the 2025-11-25 "recommended approach"); see [LegacyScopeStrategy].
// offline_access is never listed. Step-up is bounded per principal and
// scope set (Config.StepUpLimit): once the bound is reached the answer is a
// 403 without any WWW-Authenticate header, so that no client is invited to
// re-authorize again within the window.
//
// # Decisions
//
//   - A non-Bearer Authorization scheme (Basic, DPoP) counts as no bearer
//     credentials: 401 with the plain challenge.
//   - An access_token query parameter is refused with 400 invalid_request,
//     with or without an Authorization header.
//   - JSON-RPC batches are refused (400) for every revision: MCP removed
//     them in 2025-06-18, and authorizing a batch as a unit is error-prone.
//   - A POST body that is not JSON gets 400: the middleware does not
//     authorize what it cannot parse. Every POST body is parsed whatever
//     its Content-Type, since a downstream parser might ignore the header;
//     the MCP server still enforces the media type itself.
//   - Members the middleware authorizes on that are repeated or spelled in
//     another case ("Method") are refused with 400, so that no downstream
//     JSON decoder can see a different operation than the one authorized.
//   - Keys unavailable (validate.ErrKeysUnavailable) gives 503 with
//     Retry-After (Config.RetryAfter, 30s by default) and no challenge, so
//     clients do not re-authorize against a healthy authorization server.
//   - Origin mismatches get 403 without a challenge; a request without
//     Origin passes.
//
// The metadata document must be reachable without a token: mount
// [Middleware.MetadataHandler] outside the middleware.
//
// # Observability
//
// Config.OnDecision receives a [Decision] for every authorized request and
// every refusal: the status, a stable [Reason] code (expired, audience,
// insufficient_scope, …), the MCP method, tool, prompt or resource rule,
// the protocol revision, the [Principal] and the internal cause. Its string
// fields are bounded by the configuration, so they can label metrics
// directly. A nil OnDecision costs nothing.
package middleware
