// Package mcpgo connects mcpguard's middleware to mark3labs/mcp-go's
// StreamableHTTPServer (github.com/mark3labs/mcp-go/server), stateful or
// stateless. Import it only with mcp-go: middleware itself never depends
// on an SDK.
//
//	a, err := mcpgo.New(mcpgo.Config{Middleware: m})
//	s := server.NewStreamableHTTPServer(mcpServer, a.Options()...) // a's options last
//	mux.Handle("/mcp", a.Handler(s))
//
// # What mcp-go delivers, and what this package adds
//
// mcp-go derives the context of every handler from the HTTP request that
// carries the message, so [middleware.PrincipalFromContext] in a tool
// handler returns the principal of that request, in both modes. What
// mcp-go does not do is bind a session to anyone: a session ID is checked
// for existence at most (its InsecureStatefulSessionIdManager), a GET
// stream is opened for any session ID without even that, and a DELETE
// ends any session. So another principal holding a session's ID could
// read its stream, answer its server-to-client requests, or end it.
//
// In stateful mode (the default here) [Adapter.Options] installs a session
// ID manager that records, when mcp-go mints a session ID, the
// [middleware.Principal.ID] (issuer, subject, client, tenant) of the
// request that created it, and [Adapter.Handler] refuses, before mcp-go
// sees it, every request carrying a session ID that is unknown or belongs
// to another principal: 404 "session not found" on POST, GET and DELETE,
// which reveals nothing and makes a legitimate client start a new session.
// Sessions are forgotten when deleted, when mcp-go's idle sweeper ends
// them (server.WithSessionIdleTTL), and, past Config.MaxSessions, oldest
// first.
//
// In stateless mode (Config.Stateless, mcp-go's WithStateLess) there are no
// session IDs: the adapter drops a client's Mcp-Session-Id header, and
// answers GET and DELETE with 405, since mcp-go would otherwise give every
// session-less GET stream the same (empty) session ID.
package mcpgo
