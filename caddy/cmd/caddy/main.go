// Command caddy is Caddy with its standard modules and mcpguard's
// http.handlers.mcpguard (docs/caddy.md): what the module's tests build
// and run.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/mcpguard/mcpguard/caddy"
)

func main() {
	caddycmd.Main()
}
