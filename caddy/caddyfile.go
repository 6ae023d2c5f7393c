package mcpguardcaddy

import (
	"encoding/json"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	caddy.RegisterModule(new(Handler))
	httpcaddyfile.RegisterHandlerDirective("mcpguard", parseCaddyfile)
	// Before respond (and so before reverse_proxy and file_server), so that
	// a site serves what mcpguard does not with its other handlers.
	httpcaddyfile.RegisterDirectiveOrder("mcpguard", httpcaddyfile.Before, "respond")
}

// UnmarshalCaddyfile reads the directive:
//
//	mcpguard [<matcher>] {
//		config_file <path>
//		config <<YAML
//			routes:
//			  - resource: https://mcp.example.com/mcp
//			    ...
//			YAML
//	}
//
// config takes the YAML of a configuration file inline (a heredoc keeps
// its lines); exactly one of config_file and config is given.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive's name
	if d.NextArg() {
		// No file argument: Caddy would take a path starting with / for
		// a path matcher.
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "config_file":
			if h.ConfigFile != "" || !d.NextArg() {
				return d.ArgErr()
			}
			h.ConfigFile = d.Val()
		case "config":
			if h.Config != nil || !d.NextArg() {
				return d.ArgErr()
			}
			b, err := json.Marshal(d.Val())
			if err != nil {
				return d.Errf("config: %v", err)
			}
			h.Config = b
		default:
			return d.Errf("unknown subdirective %q (config_file, config)", d.Val())
		}
		if d.NextArg() {
			return d.ArgErr()
		}
	}
	if h.ConfigFile != "" && h.Config != nil {
		return d.Err("set config_file or config, not both")
	}
	if h.ConfigFile == "" && h.Config == nil {
		return d.Err("config_file or config is required")
	}
	return nil
}

func parseCaddyfile(hp httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	h := new(Handler)
	err := h.UnmarshalCaddyfile(hp.Dispenser)
	return h, err
}

var _ caddyfile.Unmarshaler = (*Handler)(nil)
