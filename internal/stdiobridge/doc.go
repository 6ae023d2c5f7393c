// Package stdiobridge serves MCP servers that speak only stdio as an
// in-process Streamable HTTP endpoint for mcpguard proxy: each MCP
// session gets its own child process, started for one user, never handed
// to another, with an environment built from the route's configuration
// and a working directory templated from the user (docs/proxy.md,
// "stdio upstreams").
//
// The bridge sits behind the proxy's whole decision: the proxy forwards
// to it through [Bridge.Transport] exactly as it forwards to an HTTP
// upstream, so every check in front holds unchanged.
//
// Framing is MCP's stdio transport: one JSON-RPC message per line,
// UTF-8, no embedded newline. Every line a child writes is read through
// internal/strictjson and bounded in size; a line that is not a JSON-RPC
// message ends that child. Request ids are remapped so that the ids a
// child sees are the bridge's own.
package stdiobridge
