// Package mcpgo connects mcpguard's middleware to mark3labs/mcp-go's
// StreamableHTTPServer (github.com/mark3labs/mcp-go/server), stateful or
// stateless. Import it only with mcp-go: middleware itself never depends
// on an SDK.
//
//	a, err := mcpgo.New(mcpgo.Config{Middleware: m})
//	s := server.NewStreamableHTTPServer(mcpServer, a.Options()...) // a's options last
//	mux.Handle("/mcp", m.Handler(a.Bind(s)))
//
// # What mcp-go delivers, and what this package adds
//
// mcp-go derives the context of every handler from the HTTP request that
// carries the message, so [middleware.PrincipalFromContext] in a tool
// handler returns the principal of that request, in both modes. What
// mcp-go does not do is bind a session to anyone; the middleware does
// that itself ([middleware.SessionConfig]), with or without this package:
// a request carrying another principal's or an unknown session ID gets 404
// before mcp-go runs.
//
// In stateful mode (the default here) [Adapter.Options] installs a session
// ID manager that keeps no state: mcp-go's default manager remembers every
// ended session forever, and the middleware holds the bindings.
//
// In stateless mode (Config.Stateless, mcp-go's WithStateLess) there are no
// session IDs (a client's is unknown to the middleware: 404), and the
// adapter answers GET and DELETE with 405, since mcp-go would otherwise
// give every session-less GET stream the same (empty) session ID, shared
// by every principal.
//
// # Lists
//
// tools/list, prompts/list, resources/list and resources/templates/list
// answers are shown as middleware.Config.Lists says by the middleware
// itself, for every server behind Middleware.Handler (docs/policy.md
// "Lists"), after mcp-go paginates: under ListHide a page may hold fewer
// entries than the page size.
package mcpgo
