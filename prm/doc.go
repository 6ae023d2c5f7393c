// Package prm implements RFC 9728 OAuth 2.0 Protected Resource Metadata for
// MCP servers: the metadata document, its well-known URLs, an HTTP handler
// that serves it, and the client-side checks of a fetched document
// ([Parse], RFC 9728 §3.3). The package is a standard-library leaf, so the
// fetch itself lives in package client (client.FetchMetadata), on the
// module's bounded, SSRF-guardable fetcher.
//
// Serving the metadata next to an MCP endpoint at https://mcp.example.com/mcp:
//
//	h, err := prm.Handler(prm.Metadata{
//		Resource:             "https://mcp.example.com/mcp",
//		AuthorizationServers: []string{"https://auth.example.com"},
//	})
//	inserted, root, err := prm.Paths("https://mcp.example.com/mcp")
//	mux.Handle(inserted, h) // /.well-known/oauth-protected-resource/mcp
//	mux.Handle(root, h)     // /.well-known/oauth-protected-resource
//
// The path-inserted document (RFC 9728 §3.1) carries the configured
// resource. The root document describes the origin: see [Handler].
//
// Nothing in this package reads the Host or X-Forwarded-* request headers;
// every URL comes from the configured resource.
package prm
