package mcpguardcaddy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/mcpguard/mcpguard/proxy"
)

// maxConfigFileBytes bounds a config_file: the 1 MiB proxy.Parse takes,
// and one byte more so that it reports the file as too large.
const maxConfigFileBytes = 1<<20 + 1

// Handler is the http.handlers.mcpguard module: a proxy.Proxy inside
// Caddy. The requests the proxy serves (its routes, their RFC 9728
// metadata, the JWK Set of its assertions, /healthz, /readyz) get exactly
// the answers of `mcpguard proxy`, and an authorized MCP request is
// forwarded to the route's upstream by the proxy's own forwarder; every
// other request goes to the next handler of the Caddy route.
//
// Exactly one of ConfigFile and Config is set.
type Handler struct {
	// ConfigFile is the path of a configuration file of `mcpguard proxy`
	// (YAML, docs/proxy.md), read at provisioning.
	ConfigFile string `json:"config_file,omitempty"`
	// Config is the same configuration inline: a JSON object with the
	// keys of the YAML file (routes, issuers, assertion, ...), or a
	// string holding the YAML text (what the Caddyfile's heredoc gives).
	Config json.RawMessage `json:"config,omitempty"`

	cfg proxy.Config
	px  *proxy.Proxy
}

// CaddyModule returns the module's information.
func (*Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.mcpguard",
		New: func() caddy.Module { return new(Handler) },
	}
}

// source names the configuration in errors.
func (h *Handler) source() string {
	if h.ConfigFile != "" {
		return h.ConfigFile
	}
	return "inline config"
}

// Provision decodes the configuration with the proxy's own decoder
// (proxy.Parse: unknown keys, wrong types, duplicate keys and inline
// secrets refused, secrets read from *_env and *_file). The proxy itself
// is built by Validate.
func (h *Handler) Provision(ctx caddy.Context) error {
	data, err := h.read()
	if err != nil {
		return fmt.Errorf("mcpguard: %w", err)
	}
	cfg, err := proxy.Parse(h.source(), data, os.Getenv)
	if err != nil {
		return fmt.Errorf("mcpguard: %w", err)
	}
	cfg.Logger = ctx.Slogger()
	h.cfg = cfg
	return nil
}

// read returns the YAML (or JSON) text of the configuration.
func (h *Handler) read() ([]byte, error) {
	switch {
	case h.ConfigFile != "" && len(h.Config) > 0:
		return nil, errors.New("set config_file or config, not both")
	case h.ConfigFile != "":
		f, err := os.Open(h.ConfigFile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, maxConfigFileBytes))
	case len(h.Config) > 0:
		var text string
		if json.Unmarshal(h.Config, &text) == nil {
			return []byte(text), nil
		}
		return h.Config, nil // a JSON object is YAML too
	}
	return nil, errors.New("config_file or config is required")
}

// Validate builds the proxy from the decoded configuration: every check
// of `mcpguard proxy -check` (errors name the file and the route, as
// routes[0].resource), key files loaded, issuers' key sources started in
// the background, Redis connected when configured.
func (h *Handler) Validate() error {
	px, err := proxy.New(h.cfg)
	if err != nil {
		return fmt.Errorf("mcpguard: %s: %w", h.source(), err)
	}
	h.px = px
	return nil
}

// Cleanup ends the proxy's SSE streams cleanly (clients resume with
// Last-Event-ID on the new configuration) and stops its key sources and
// connections.
func (h *Handler) Cleanup() error {
	if h.px == nil {
		return nil
	}
	h.px.EndGetStreams()
	err := h.px.Close()
	h.px = nil
	return err
}

// ServeHTTP answers the requests the proxy serves and passes the others
// to next.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if !h.px.Serves(r) {
		return next.ServeHTTP(w, r)
	}
	h.px.ServeHTTP(w, r)
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
