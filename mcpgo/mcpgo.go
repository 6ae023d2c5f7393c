package mcpgo

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpguard/mcpguard/middleware"
)

// ErrConfig reports an unusable [Config]. Only [New] returns it.
var ErrConfig = errors.New("mcpgo: invalid config")

// errNotOurs is the session ID manager's error for an ID it did not mint,
// seen by mcp-go only (it answers 404); the middleware refuses every
// unknown session ID before mcp-go runs anyway.
var errNotOurs = errors.New("mcpgo: unknown session")

// Config configures an [Adapter].
type Config struct {
	// Middleware authorizes every request. Required.
	Middleware *middleware.Middleware
	// Stateless serves without sessions (mcp-go's WithStateLess(true)).
	// Defaults to false: stateful sessions, each bound to the principal
	// that created it by the middleware.
	Stateless bool
}

// Adapter puts the middleware in front of an mcp-go StreamableHTTPServer.
// Create it with [New]; it is safe for concurrent use.
type Adapter struct {
	m         *middleware.Middleware
	stateless bool
}

// New checks cfg and returns an Adapter.
func New(cfg Config) (*Adapter, error) {
	if cfg.Middleware == nil {
		return nil, fmt.Errorf("%w: no Middleware", ErrConfig)
	}
	return &Adapter{m: cfg.Middleware, stateless: cfg.Stateless}, nil
}

// Options returns the mcp-go options the adapter needs: a session ID
// manager that keeps no state (stateful; the middleware holds the
// bindings and mcp-go's own manager would remember every ended session
// forever), or WithStateLess(true). Pass them last to
// server.NewStreamableHTTPServer, since a later session option replaces
// them.
func (a *Adapter) Options() []server.StreamableHTTPOption {
	if a.stateless {
		return []server.StreamableHTTPOption{server.WithStateLess(true)}
	}
	return []server.StreamableHTTPOption{server.WithSessionIdManager(manager{})}
}

// Bind returns the adapter's check for s, an mcp-go StreamableHTTPServer
// built with [Adapter.Options]: mount it behind
// [middleware.Middleware.Handler] (m.Handler(a.Bind(s))) or with
// Guard.Mount, which puts it there. It must run behind the middleware, and
// answers 401 through Middleware.Challenge for a request without a
// principal. Sessions are bound by the middleware. Stateless, GET and
// DELETE get 405: mcp-go would give every session-less GET stream the same
// (empty) session, shared by every principal.
func (a *Adapter) Bind(next http.Handler) http.Handler {
	if next == nil {
		panic("mcpgo: Bind(nil)")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := middleware.PrincipalFromContext(r.Context()); !ok {
			a.m.Challenge(w, r, middleware.Error{Reason: "no_principal"})
			return
		}
		if a.stateless && (r.Method == http.MethodGet || r.Method == http.MethodDelete) {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// manager is mcp-go's SessionIdManager: 128 random bits per session, and
// no memory of its own.
type manager struct{}

// sessionPrefix starts every session ID.
const sessionPrefix = "mcpguard-"

func (manager) Generate() string { return sessionPrefix + rand.Text() }

func (manager) Validate(id string) (isTerminated bool, err error) {
	if !strings.HasPrefix(id, sessionPrefix) {
		return false, errNotOurs
	}
	return false, nil
}

func (manager) Terminate(string) (isNotAllowed bool, err error) { return false, nil }
