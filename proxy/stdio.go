package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpguard/mcpguard/internal/answer"
	"github.com/mcpguard/mcpguard/internal/stdiobridge"
	"github.com/mcpguard/mcpguard/middleware"
)

// stdioTarget is the URL the forwarder uses for a stdio route: never
// dialled (the bridge's transport serves it in process).
var stdioTarget = &url.URL{Scheme: "http", Host: "stdio.invalid", Path: "/mcp"}

func (s *Stdio) enabled() bool { return len(s.Command) > 0 }

// bridgeConfig is the route's stdiobridge.Config.
func (x *route) bridgeConfig() stdiobridge.Config {
	s := x.cfg.Stdio
	return stdiobridge.Config{
		Command: s.Command, Env: s.Env, PassEnv: s.PassEnv, Dir: s.Dir,
		MaxChildren: s.MaxChildren, MaxPerUser: s.MaxPerUser, StartTimeout: s.StartTimeout, IdleTimeout: s.IdleTimeout,
		StopGrace: s.StopGrace, RequestTimeout: s.RequestTimeout, MaxMessageBytes: s.MaxMessageBytes, MaxQueued: s.MaxQueued,
		ResumeWindow: s.ResumeWindow, ForwardRoots: s.ForwardRoots, PerUser: s.PerUser, PIDNamespace: s.PIDNamespace,
		User: stdioUser, Logger: x.log.With("component", "stdio"),
		// The middleware's reader of answers removes a larger SSE event.
		MaxEventBytes: answer.DefaultMaxMessageBytes,
	}
}

// stdioIdentity sets no identity: a stdio child learns its user from
// its environment (MCPGUARD_USER_*).
type stdioIdentity struct{}

func (stdioIdentity) set(context.Context, *reqState, *middleware.Principal, *http.Request) error {
	return nil
}

func (stdioIdentity) mode() string { return "stdio" }

// checkStdio checks a stdio route's settings (New looks the command up).
func checkStdio(at string, r *Route) error {
	if r.Upstream != "" {
		return fmt.Errorf("%w: %s: upstream and stdio.command are exclusive: a route forwards to a URL or runs a command", ErrConfig, at)
	}
	if id := r.Identity; id.Mode != "" || id.Audience != "" || id.Header != "" || id.TTL != 0 || id.Exchange.TokenEndpoint != "" {
		return fmt.Errorf("%w: %s.identity does not apply to a stdio route: its children learn their user from MCPGUARD_USER_* variables", ErrConfig, at)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"max_children", int64(r.Stdio.MaxChildren)}, {"max_per_user", int64(r.Stdio.MaxPerUser)},
		{"start_timeout", int64(r.Stdio.StartTimeout)}, {"idle_timeout", int64(r.Stdio.IdleTimeout)},
		{"stop_grace", int64(r.Stdio.StopGrace)}, {"request_timeout", int64(r.Stdio.RequestTimeout)},
		{"max_message_bytes", int64(r.Stdio.MaxMessageBytes)}, {"max_queued", int64(r.Stdio.MaxQueued)},
		{"resume_window", int64(r.Stdio.ResumeWindow)}} {
		if f.v < 0 {
			return fmt.Errorf("%w: %s.stdio.%s must not be negative", ErrConfig, at, f.name)
		}
	}
	cfg := stdiobridge.Config{Command: r.Stdio.Command, Env: r.Stdio.Env, PassEnv: r.Stdio.PassEnv, Dir: r.Stdio.Dir, User: stdioUser, PIDNamespace: r.Stdio.PIDNamespace}
	if err := stdiobridge.Check(cfg); err != nil {
		return fmt.Errorf("%w: %s.stdio: %s", ErrConfig, at, strings.TrimPrefix(err.Error(), stdiobridge.ErrConfig.Error()+": "))
	}
	return nil
}

// stdioUser is the user of a request the middleware authorized: an
// anonymous principal (a public operation) has none.
func stdioUser(r *http.Request) (stdiobridge.User, bool) {
	p, ok := middleware.PrincipalFromContext(r.Context())
	if !ok || p.Anonymous {
		return stdiobridge.User{}, false
	}
	return stdiobridge.User{Key: p.UserID(), Issuer: p.Issuer, Subject: p.Subject, Tenant: p.Tenant, Client: p.ClientID}, true
}
