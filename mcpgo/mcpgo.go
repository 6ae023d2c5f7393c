package mcpgo

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpguard/mcpguard/internal/sessionowner"
	"github.com/mcpguard/mcpguard/middleware"
)

// DefaultMaxSessions is the number of stateful sessions tracked when
// Config.MaxSessions is zero.
const DefaultMaxSessions = 10000

// ErrConfig reports an unusable [Config]. Only [New] returns it.
var ErrConfig = errors.New("mcpgo: invalid config")

// Errors of the session ID manager, seen by mcp-go only (it answers 404).
var (
	errUnknownSession = errors.New("mcpgo: unknown session")
	errOtherPrincipal = errors.New("mcpgo: session of another principal")
)

const sessionHeader = "Mcp-Session-Id"

// Config configures an [Adapter].
type Config struct {
	// Middleware authorizes every request. Required.
	Middleware *middleware.Middleware
	// Stateless serves without sessions (mcp-go's WithStateLess(true)).
	// Defaults to false: stateful sessions, each bound to the principal
	// that created it.
	Stateless bool
	// MaxSessions bounds the stateful sessions tracked. Zero means
	// [DefaultMaxSessions]; when full, the oldest is forgotten and its
	// client gets 404 and starts a new session. Negative is refused.
	MaxSessions int
}

// Adapter puts the middleware in front of an mcp-go StreamableHTTPServer
// and binds its sessions to principals. Create it with [New]; it is safe
// for concurrent use.
type Adapter struct {
	m         *middleware.Middleware
	stateless bool
	sessions  *sessionowner.Owners
}

// New checks cfg and returns an Adapter.
func New(cfg Config) (*Adapter, error) {
	switch {
	case cfg.Middleware == nil:
		return nil, fmt.Errorf("%w: no Middleware", ErrConfig)
	case cfg.MaxSessions < 0:
		return nil, fmt.Errorf("%w: negative MaxSessions", ErrConfig)
	case cfg.MaxSessions == 0:
		cfg.MaxSessions = DefaultMaxSessions
	}
	return &Adapter{
		m:         cfg.Middleware,
		stateless: cfg.Stateless,
		sessions:  sessionowner.New(cfg.MaxSessions),
	}, nil
}

// Options returns the mcp-go options the adapter needs: its session ID
// manager (stateful) or WithStateLess(true). Pass them last to
// server.NewStreamableHTTPServer, since a later session option replaces
// them.
func (a *Adapter) Options() []server.StreamableHTTPOption {
	if a.stateless {
		return []server.StreamableHTTPOption{server.WithStateLess(true)}
	}
	return []server.StreamableHTTPOption{server.WithSessionIdManagerResolver(resolver{a.sessions})}
}

// Handler returns s, an mcp-go StreamableHTTPServer built with
// [Adapter.Options], behind [middleware.Middleware.Handler] and
// [Adapter.Bind]: mount it at the MCP endpoint.
func (a *Adapter) Handler(s http.Handler) http.Handler {
	return a.m.Handler(a.Bind(s))
}

// Bind returns the session check alone, for chains that run
// [middleware.Middleware.Handler] themselves: it must run behind it, and
// answers 401 through Middleware.Challenge for a request without a
// principal. Stateful: a request carrying an Mcp-Session-Id that is not a
// session of its principal gets 404 before next runs. Stateless: the
// header is dropped, and GET and DELETE get 405.
func (a *Adapter) Bind(next http.Handler) http.Handler {
	if next == nil {
		panic("mcpgo: Bind(nil)")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := middleware.PrincipalFromContext(r.Context())
		if !ok {
			a.m.Challenge(w, r, middleware.ErrNoPrincipal)
			return
		}
		if a.stateless {
			if r.Method == http.MethodGet || r.Method == http.MethodDelete {
				w.Header().Set("Allow", http.MethodPost)
				http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
				return
			}
			if _, has := r.Header[sessionHeader]; has {
				r = r.Clone(r.Context())
				r.Header.Del(sessionHeader)
			}
			next.ServeHTTP(w, r)
			return
		}
		ids := r.Header.Values(sessionHeader)
		switch {
		case len(ids) > 1:
			http.Error(w, "Bad Request: repeated Mcp-Session-Id", http.StatusBadRequest)
			return
		case len(ids) == 1 && owner(a.sessions, ids[0]) != p.ID():
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// resolver gives mcp-go a session ID manager per request, bound to the
// request's principal; nil requests (mcp-go's idle sweeper) get one that
// may only end sessions.
type resolver struct{ s *sessionowner.Owners }

func (rs resolver) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil {
		return manager{s: rs.s}
	}
	p, _ := middleware.PrincipalFromContext(r.Context())
	return manager{s: rs.s, owner: p.ID()} // nil p: "", owning nothing
}

// manager is mcp-go's SessionIdManager for one principal (owner), or for
// the system (owner "").
type manager struct {
	s     *sessionowner.Owners
	owner string
}

// sessionPrefix starts every session ID; the rest is 128 random bits.
const sessionPrefix = "mcpguard-"

func (m manager) Generate() string {
	if m.owner == "" {
		return "" // no principal: no session to bind
	}
	id := sessionPrefix + rand.Text()
	m.s.Add(id, m.owner)
	return id
}

func (m manager) Validate(id string) (isTerminated bool, err error) {
	switch o := owner(m.s, id); {
	case o == "":
		return false, errUnknownSession
	case o != m.owner:
		return false, errOtherPrincipal
	}
	return false, nil
}

func (m manager) Terminate(id string) (isNotAllowed bool, err error) {
	if o := owner(m.s, id); o != "" && m.owner != "" && o != m.owner {
		return true, nil
	}
	m.s.Remove(id)
	return false, nil
}

// owner returns the principal ID of session id, or "" if unknown ("" is
// no principal's ID, so an unknown session is nobody's).
func owner(s *sessionowner.Owners, id string) string {
	o, _ := s.Get(id)
	return o
}
