// Package mcpguardcaddy is the http.handlers.mcpguard module of Caddy:
// mcpguard's whole authorization decision, as `mcpguard proxy` makes it,
// inside Caddy's HTTP server (docs/caddy.md). Its configuration is the
// proxy's own (github.com/mcpguard/mcpguard/proxy Config, the YAML schema
// of docs/proxy.md), decoded by proxy.Parse, from a file or inline; the
// module builds a proxy.Proxy from it and lets Caddy serve everything
// else: TLS, certificates, the listener, other routes.
//
// It lives in its own Go module so that users of the mcpguard library
// never download Caddy's dependencies. Build Caddy with it with
// ./cmd/caddy of this module (or xcaddy --with
// github.com/mcpguard/mcpguard/caddy).
//
// Caddy's modules register themselves in init functions (caddy.RegisterModule
// and the Caddyfile directive): the one place in mcpguard with an init.
package mcpguardcaddy
