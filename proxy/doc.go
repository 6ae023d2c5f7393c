// Package proxy puts mcpguard's whole authorization decision in front of
// any MCP server that speaks Streamable HTTP, in any language: for each
// route, the [mcpguard.Guard] middleware (token validation, DPoP, Origin,
// the per-operation policy, step-up, protected-resource metadata) with a
// reverse proxy to the upstream as its next handler. It is the engine of
// the "mcpguard proxy" command (docs/proxy.md).
//
//	px, err := proxy.New(proxy.Config{Routes: []proxy.Route{{
//		Resource: "https://mcp.example.com/mcp",
//		Upstream: "http://127.0.0.1:3000/mcp",
//		Issuers:  []string{"https://auth.example.com"},
//	}}})
//	defer px.Close()
//	http.ListenAndServe(":8080", px)
//
// The upstream never receives the client's token, cookies or any
// client-sent identity header: by default it gets a short-lived JWT signed
// by the proxy (issuer: the proxy, audience: the upstream), which it
// verifies against the proxy's JWK Set; see [Identity] for the other
// modes. Forwarding keeps the MCP transport intact: POST answers as JSON
// or SSE, GET streams, DELETE and Last-Event-ID pass through, every SSE
// event is flushed as it arrives, and request bodies are forwarded byte
// for byte. An upstream that is down, slow or failing gets a JSON-RPC
// shaped 502, 503 or 504 with no upstream detail. On a loopback listener,
// an MCP request whose Host is neither a loopback name nor the route's
// resource host gets 403 before any other check (DNS rebinding, as the
// go-sdk's Streamable HTTP handler has it; docs/proxy.md).
//
// A YAML file (the schema of "mcpguard proxy -config") becomes a Config
// through [Parse]: read it yourself, bounded (Parse refuses more than
// 1 MiB), and pass its bytes and os.Getenv. Upstreams verify assertions
// against Assertion.Issuer (default: the origin of the first route's
// Resource) and the JWK Set at Assertion.JWKSPath (default
// "/.well-known/jwks.json"); set both when the upstream's configuration
// must not depend on the defaults. At shutdown, call [Proxy.EndGetStreams]
// before http.Server.Shutdown (GET streams never end by themselves) and
// [Proxy.EndAnswers] when its drain has waited long enough.
package proxy
