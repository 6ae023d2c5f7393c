package stdiobridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// ErrConfig reports an unusable [Config].
var ErrConfig = errors.New("stdiobridge: invalid config")

// Defaults of [Config]'s zero values (docs/proxy.md, "stdio upstreams").
const (
	DefaultMaxChildren     = 64
	DefaultMaxPerUser      = 4
	DefaultStartTimeout    = 30 * time.Second
	DefaultIdleTimeout     = 15 * time.Minute
	DefaultStopGrace       = 5 * time.Second
	DefaultRequestTimeout  = 10 * time.Minute
	DefaultMaxMessageBytes = 4 << 20
	DefaultMaxQueued       = 256
	DefaultResumeWindow    = time.Minute
	// retryAfter is the Retry-After of a 503 at the process bound.
	retryAfter = "5"
	// maxStderrLine bounds one logged stderr line.
	maxStderrLine = 4 << 10
	// stderrBurst and stderrRate bound the stderr lines of one child
	// that are logged: a burst, then so many a second.
	stderrBurst = 100
	stderrRate  = 10
)

// Environment variables that tell a child who its user is.
const (
	EnvIssuer  = "MCPGUARD_USER_ISSUER"
	EnvSubject = "MCPGUARD_USER_SUBJECT"
	EnvTenant  = "MCPGUARD_USER_TENANT"
	EnvClient  = "MCPGUARD_USER_CLIENT"
)

// User is who a request is for: Key identifies the user (a child is
// never handed to a request of another Key); the other fields reach
// the child's environment and directory template.
type User struct {
	Key                             string
	Issuer, Subject, Tenant, Client string
}

// Config configures a [Bridge].
type Config struct {
	// Command is the server's argv, run without a shell. Required; a
	// first element without a slash is looked up in PATH once, by New,
	// and a relative one is taken relative to the proxy's working
	// directory then (never the child's Dir).
	// In the arguments after it, {dir} is the user's directory (Dir as
	// rendered for the user: an absolute path).
	Command []string
	// Env are variables set in the child's environment, by name; in a
	// value, {dir} is the user's directory, as in Command. The child
	// inherits nothing else but PassEnv and the EnvIssuer, EnvSubject,
	// EnvTenant and EnvClient variables (which Env cannot set). Empty
	// means none.
	Env map[string]string
	// PassEnv names variables copied from the proxy's environment when
	// set there (PATH, HOME). Empty means none.
	PassEnv []string
	// Dir is the child's working directory, an absolute path template in
	// which a whole component may be {issuer}, {subject}, {tenant},
	// {client} (each escaped to one safe component) or {user} (a hash of
	// the user key); it is created 0700. Empty means the proxy's own, and
	// then {dir} in Command or Env is refused.
	Dir string
	// MaxChildren bounds the children running at once: beyond, the
	// requesting user's least recently used idle child is ended, else any
	// user's idle for a minute, else the start is refused (evict.go). Zero
	// means DefaultMaxChildren.
	MaxChildren int
	// MaxPerUser bounds one user's children: beyond, the user's least
	// recently used idle child is ended, else the start is refused. Zero
	// means DefaultMaxPerUser.
	MaxPerUser int
	// StartTimeout bounds the answer to initialize (RequestTimeout does
	// not). Zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// IdleTimeout stops a child with no request for this long. Zero means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// StopGrace is the time between SIGTERM and SIGKILL. Zero means
	// DefaultStopGrace.
	StopGrace time.Duration
	// RequestTimeout bounds the answer to one request, and the writing
	// of one line to the child's stdin: a child that does not answer, or
	// read, in time is stopped as hung (a sequential server reads nothing
	// while it serves a call). Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxMessageBytes bounds one line a child writes: a longer one ends
	// the child. Zero means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// MaxEventBytes is the bound on one SSE event of the reader in front
	// of the bridge (the proxy's middleware removes a larger event): a
	// response of the child that would make a larger event reaches its
	// client as the error -32603 "Response too large" instead of being
	// lost (event.go). A JSON answer is not bounded by it. Zero means no
	// bound.
	MaxEventBytes int
	// MaxQueued bounds the messages waiting for a client in one session,
	// the events a session keeps for resumption (with 4×MaxMessageBytes
	// bytes; docs/proxy.md, "Resuming a stream"), the requests in
	// flight in it and the client messages waiting to be written to the
	// child, and with PerUser the client sessions of a child (a
	// further initialize ends the oldest). Zero means DefaultMaxQueued.
	MaxQueued int
	// ResumeWindow is how long the SSE stream of a request stays
	// resumable (Last-Event-ID) once its response has come and its
	// connection has gone, whether or not the response was written on it
	// (resume.go). Zero means DefaultResumeWindow.
	ResumeWindow time.Duration
	// PerUser shares one child between the sessions of a user: the
	// first session's initialize starts it, later sessions of the same
	// user are answered from its initialize result and reach the same
	// process (never another user's). False gives each session its own.
	PerUser bool
	// ForwardRoots passes the client's roots (MCP roots/list) to the
	// child. Dangerous: a server may take a client's roots as what it may
	// access (the filesystem server replaces its allowed directories with
	// them), so that a user could point his child at another user's
	// directory. False hides them (roots.go).
	ForwardRoots bool
	// PIDNamespace starts each child as the first process of a PID
	// namespace of its own (Linux; it needs CAP_SYS_ADMIN): when the child
	// ends, the kernel kills every process it left, also those that left
	// its process group (setsid, a daemon), which are otherwise not
	// stopped. The child is then PID 1 there: a signal it has no handler
	// for is ignored (SIGTERM: it is killed after StopGrace), and it
	// inherits its orphans. False starts children in the proxy's.
	PIDNamespace bool
	// User returns who a request is for; false answers 403. Required.
	User func(*http.Request) (User, bool)
	// Logger receives the children's stderr lines and the bridge's
	// events. Nil discards.
	Logger *slog.Logger
	// LookupEnv reads the proxy's environment for PassEnv. Nil means
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MaxChildren, DefaultMaxChildren)
	def(&c.MaxPerUser, DefaultMaxPerUser)
	def(&c.MaxMessageBytes, DefaultMaxMessageBytes)
	def(&c.MaxQueued, DefaultMaxQueued)
	defD(&c.StartTimeout, DefaultStartTimeout)
	defD(&c.IdleTimeout, DefaultIdleTimeout)
	defD(&c.StopGrace, DefaultStopGrace)
	defD(&c.RequestTimeout, DefaultRequestTimeout)
	defD(&c.ResumeWindow, DefaultResumeWindow)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.LookupEnv == nil {
		c.LookupEnv = os.LookupEnv
	}
	c.Command = slices.Clone(c.Command)
	c.PassEnv = slices.Clone(c.PassEnv)
	env := make(map[string]string, len(c.Env))
	for k, v := range c.Env {
		env[k] = v
	}
	c.Env = env
	return c
}

// Check reports what makes cfg unusable, without looking up the command.
func Check(cfg Config) error {
	if !supported {
		return fmt.Errorf("%w: stdio upstreams need a unix system", ErrConfig)
	}
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return fmt.Errorf("%w: command is required (the server's argv, e.g. [npx, -y, @modelcontextprotocol/server-everything])", ErrConfig)
	}
	for _, a := range cfg.Command {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("%w: command: an argument holds a NUL byte", ErrConfig)
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range cfg.Env {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range append(names, cfg.PassEnv...) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%w: env: %q is not a variable name", ErrConfig, k)
		}
		if strings.HasPrefix(k, "MCPGUARD_USER_") {
			return fmt.Errorf("%w: env: %s is set by the proxy to the user's value", ErrConfig, k)
		}
	}
	for _, k := range names {
		if strings.IndexByte(cfg.Env[k], 0) >= 0 {
			return fmt.Errorf("%w: env: the value of %s holds a NUL byte", ErrConfig, k)
		}
	}
	if _, err := parseDir(cfg.Dir); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := checkDirToken(cfg); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.User == nil {
		return fmt.Errorf("%w: User is required", ErrConfig)
	}
	if cfg.PIDNamespace && !pidNamespaces {
		return fmt.Errorf("%w: pid_namespace needs Linux", ErrConfig)
	}
	return nil
}

// Bridge is the in-process Streamable HTTP endpoint in front of a
// route's child processes. Create it with [New]; stop it with
// [Bridge.Close].
type Bridge struct {
	cfg  Config
	path string // the command, looked up
	dir  *dirTemplate
	log  *slog.Logger
	pool strictjson.Pool

	mu       sync.Mutex
	sessions map[string]*session
	shared   map[string]*sharedChild // children shared by a user's requests, by key
	views    map[string]*session     // client sessions of shared children, by session id
	viewIDs  map[*session][]string   // the client sessions of each shared child, oldest first
	perUser  map[string]int
	running  int
	closed   bool

	stopJanitor chan struct{}
	janitorDone chan struct{}
	wg          sync.WaitGroup // sessions' goroutines and starts under way
}

// New checks cfg, looks up the command and starts the idle janitor.
func New(cfg Config) (*Bridge, error) {
	if err := Check(cfg); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	path, err := exec.LookPath(cfg.Command[0])
	if err == nil {
		// A relative path is the proxy's, never the child's directory:
		// exec.Cmd takes a relative Path relative to Dir, the user's,
		// where a file of that name would be the user's program.
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: command %q: %w", ErrConfig, cfg.Command[0], err)
	}
	dir, _ := parseDir(cfg.Dir)
	b := &Bridge{cfg: cfg, path: path, dir: dir, log: cfg.Logger, sessions: map[string]*session{}, shared: map[string]*sharedChild{}, views: map[string]*session{}, viewIDs: map[*session][]string{}, perUser: map[string]int{},
		stopJanitor: make(chan struct{}), janitorDone: make(chan struct{})}
	go b.janitor()
	return b, nil
}

// Close stops every child and waits until each is reaped (SIGKILL after
// the grace). Requests after it get 503. It is idempotent.
func (b *Bridge) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	ss := make([]*session, 0, len(b.sessions))
	for _, s := range b.sessions {
		ss = append(ss, s)
	}
	b.mu.Unlock()
	close(b.stopJanitor)
	<-b.janitorDone
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.end("proxy shutting down")
		}()
	}
	wg.Wait()
	b.wg.Wait()
	return nil
}

// Children returns the number of children running.
func (b *Bridge) Children() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running
}

// janitor stops idle children.
func (b *Bridge) janitor() {
	defer close(b.janitorDone)
	tick := b.cfg.IdleTimeout / 4
	tick = max(tick, 10*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-b.stopJanitor:
			return
		case <-t.C:
		}
		now := time.Now()
		var idle []*session
		b.mu.Lock()
		for _, s := range b.sessions {
			if s.claimIdleFor(now, b.cfg.IdleTimeout) {
				idle = append(idle, s)
			}
		}
		b.mu.Unlock()
		for _, s := range idle {
			go s.end("idle timeout")
		}
	}
}

// env builds the child's environment for u, whose directory is dir.
func (b *Bridge) env(u User, dir string) []string {
	env := make([]string, 0, len(b.cfg.PassEnv)+len(b.cfg.Env)+4)
	for _, k := range b.cfg.PassEnv {
		if v, ok := b.cfg.LookupEnv(k); ok && strings.IndexByte(v, 0) < 0 {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(mapKeys(b.cfg.Env)) {
		env = append(env, k+"="+withDir(b.cfg.Env[k], dir))
	}
	return append(env, EnvIssuer+"="+u.Issuer, EnvSubject+"="+u.Subject,
		EnvTenant+"="+u.Tenant, EnvClient+"="+u.Client)
}

// representable reports whether u's fields can reach a child's
// environment as they are: an environment string ends at a NUL, and
// dropping it would tell the child another user's name ("adm\x00in" as
// "admin"), so a user with one gets no child.
func representable(u User) bool {
	for _, v := range [...]string{u.Issuer, u.Subject, u.Tenant, u.Client} {
		if strings.IndexByte(v, 0) >= 0 {
			return false
		}
	}
	return true
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// errBusy is the process bound: 503 with Retry-After.
var errBusy = errors.New("stdiobridge: too many children")

// start reserves a slot for u and starts a child in a new session;
// sharedKey is its key in b.shared ("" for a session's own child).
func (b *Bridge) start(u User, stateless bool, sharedKey string) (*session, error) {
	b.mu.Lock()
	// At a bound, the user's least recently used idle child makes room
	// (evict.go): clients that leave without DELETE would otherwise hold
	// the user's slots until the idle timeout.
	for range b.cfg.MaxPerUser + 2 {
		if b.closed || b.running < b.cfg.MaxChildren && b.perUser[u.Key] < b.cfg.MaxPerUser {
			break
		}
		victim, why := b.idlestLocked(u.Key, time.Time{}), "of its user"
		if victim == nil && b.perUser[u.Key] < b.cfg.MaxPerUser {
			victim, why = b.idlestLocked("", time.Now().Add(-othersIdleAfter)), "of another user at max_children"
		}
		if victim == nil {
			break
		}
		if !victim.claimIdle(time.Time{}) {
			continue // a request came since idlestLocked looked: look again
		}
		b.mu.Unlock()
		victim.log.Info("stdio: a least recently used idle child ends to make room for a new session " + why)
		victim.end("ended for a new session " + why + " (least recently used, idle)")
		b.mu.Lock()
	}
	if b.closed || b.running >= b.cfg.MaxChildren || b.perUser[u.Key] >= b.cfg.MaxPerUser {
		b.mu.Unlock()
		return nil, errBusy
	}
	b.running++
	b.perUser[u.Key]++
	// Close waits for a start under way as for a session: one that sees
	// Close below stops its child before Close returns.
	b.wg.Add(1)
	b.mu.Unlock()
	defer b.wg.Done()
	release := func() {
		b.mu.Lock()
		b.running--
		if b.perUser[u.Key]--; b.perUser[u.Key] <= 0 {
			delete(b.perUser, u.Key)
		}
		b.mu.Unlock()
	}
	log := b.log.With("user", u.Key)
	dir := ""
	if b.dir != nil {
		d, err := b.dir.make(u)
		if err != nil {
			release()
			return nil, fmt.Errorf("stdiobridge: working directory: %w", err)
		}
		dir = d
	}
	argv := []string{b.path}
	for _, a := range b.cfg.Command[1:] {
		argv = append(argv, withDir(a, dir))
	}
	ch, err := startChild(argv, b.env(u, dir), dir, b.cfg.PIDNamespace, b.cfg.StopGrace, log)
	if err != nil {
		release()
		return nil, fmt.Errorf("stdiobridge: start: %w", err)
	}
	var idb [16]byte
	_, _ = rand.Read(idb[:])
	s := newSession(b, hex.EncodeToString(idb[:]), u, ch, log, release, stateless, sharedKey)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		s.end("proxy shutting down")
		return nil, errBusy
	}
	b.sessions[s.id] = s
	b.mu.Unlock()
	log.Info("stdio: child started", "pid", ch.cmd.Process.Pid, "session", s.id[:8])
	return s, nil
}

func (b *Bridge) remove(s *session) {
	b.mu.Lock()
	if b.sessions[s.id] == s {
		delete(b.sessions, s.id)
	}
	if sc := b.shared[s.sharedKey]; s.sharedKey != "" && sc != nil && sc.s == s {
		delete(b.shared, s.sharedKey)
	}
	for _, id := range b.viewIDs[s] {
		delete(b.views, id)
	}
	delete(b.viewIDs, s)
	b.mu.Unlock()
}

// lookup returns the child of session id and the scope of the session
// in it: "" for a session's own child, id for a client session of a
// shared child. A stateless child, or a shared one by its own id, is
// no session.
func (b *Bridge) lookup(id string) (*session, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.views[id]; s != nil {
		return s, id
	}
	if s := b.sessions[id]; s != nil && s.sharedKey == "" {
		return s, ""
	}
	return nil, ""
}

// dropView forgets client session id of shared child s and reports
// whether it was the child's last.
func (b *Bridge) dropView(id string, s *session) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.views, id)
	ids := slices.DeleteFunc(b.viewIDs[s], func(v string) bool { return v == id })
	b.viewIDs[s] = ids
	return len(ids) == 0
}

// ServeHTTP serves the Streamable HTTP endpoint (MCP 2025-11-25
// sessions): POST, GET and DELETE.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, ok := b.cfg.User(r)
	if !ok || u.Key == "" || !representable(u) {
		writeJSONError(w, http.StatusForbidden, nil, -32600, "Forbidden")
		return
	}
	if modernHeader(r) {
		// MCP 2026-07-28: no sessions (Mcp-Session-Id is ignored), POST
		// only.
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeJSONError(w, http.StatusMethodNotAllowed, nil, -32600, "Method not allowed")
			return
		}
		b.post(w, r, u, nil, "", true)
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	var s *session
	scope := ""
	if sid != "" {
		s, scope = b.lookup(sid)
		// A session of another user is as unknown as an ended one, and a
		// shared child is reached only through a session of its user.
		if s == nil || s.user.Key != u.Key {
			writeJSONError(w, http.StatusNotFound, nil, -32001, "Session not found")
			return
		}
	}
	switch r.Method {
	case http.MethodPost:
		b.post(w, r, u, s, scope, false)
	case http.MethodGet:
		if s == nil {
			writeJSONError(w, http.StatusBadRequest, nil, -32600, "Mcp-Session-Id required")
			return
		}
		s.serveGET(w, r, scope)
	case http.MethodDelete:
		if s == nil {
			writeJSONError(w, http.StatusBadRequest, nil, -32600, "Mcp-Session-Id required")
			return
		}
		if scope == "" {
			s.end("session deleted by the client")
		} else if b.dropView(scope, s) {
			s.end("the user's last session deleted by the client")
		} else {
			s.dropScope(scope)
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeJSONError(w, http.StatusMethodNotAllowed, nil, -32600, "Method not allowed")
	}
}

func (b *Bridge) post(w http.ResponseWriter, r *http.Request, u User, s *session, scope string, modern bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(b.cfg.MaxMessageBytes)+1))
	if err != nil || len(body) > b.cfg.MaxMessageBytes {
		writeJSONError(w, http.StatusBadRequest, nil, -32600, "Invalid Request")
		return
	}
	m, err := parseMessage(&b.pool, body)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, nil, -32600, "Invalid Request")
		return
	}
	if modern || s == nil && b.modernMeta(m) {
		b.postStateless(w, r, u, m)
		return
	}
	if s == nil {
		if m.kind != kindRequest || m.method != "initialize" {
			// A request without a session that is not stateless: a stdio
			// child needs its own initialize.
			writeJSONError(w, http.StatusBadRequest, m.id, -32600, "Bad Request: initialize a session, or send a stateless request")
			return
		}
		if b.cfg.PerUser {
			b.initializeShared(w, r, u, m)
			return
		}
		b.initialize(w, r, u, m)
		return
	}
	if m.kind == kindRequest && m.method == "initialize" {
		writeJSONError(w, http.StatusBadRequest, m.id, -32600, "Session already initialized")
		return
	}
	s.post(w, r, m, scope)
}

func (b *Bridge) initialize(w http.ResponseWriter, r *http.Request, u User, m message) {
	s, err := b.start(u, false, "")
	if errors.Is(err, errBusy) {
		b.log.Warn("stdio: process bound reached", "user", u.Key)
		w.Header().Set("Retry-After", retryAfter)
		writeJSONError(w, http.StatusServiceUnavailable, m.id, -32603, "Server busy")
		return
	}
	if err != nil {
		b.log.Error("stdio: child not started", "user", u.Key, "error", err.Error())
		writeJSONError(w, http.StatusBadGateway, m.id, -32603, "Server unavailable")
		return
	}
	if !b.cfg.ForwardRoots {
		raw := b.withoutRoots(m)
		if m2, err := parseMessage(&b.pool, raw); err == nil {
			m = m2
		}
	}
	c, err := s.send(m, "", false)
	if err != nil {
		s.end("initialize not written: " + err.Error())
		writeJSONError(w, http.StatusBadGateway, m.id, -32603, "Server unavailable")
		return
	}
	t := time.NewTimer(b.cfg.StartTimeout)
	defer t.Stop()
	select {
	case <-c.fin:
		if c.resp == nil {
			writeJSONError(w, http.StatusBadGateway, m.id, -32603, "Server unavailable")
			return
		}
		s.done(c)
		if res, err := parseMessage(&b.pool, c.resp); err != nil || !res.hasResult {
			// No InitializeResult, no session (Streamable HTTP): the
			// child's refusal reaches its client as sent, and the child
			// goes.
			go s.end("initialize refused by the child")
		} else {
			w.Header().Set("Mcp-Session-Id", s.id)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(c.resp)
	case <-t.C:
		s.end("no answer to initialize within the start timeout")
		writeJSONError(w, http.StatusGatewayTimeout, m.id, -32603, "Server did not start")
	case <-r.Context().Done():
		s.end("client left during initialize")
	}
}

// writeJSONError answers a JSON-RPC error with a fixed message.
func writeJSONError(w http.ResponseWriter, status int, id []byte, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorResponse(id, code, msg))
}

// itoa is strconv.Itoa for child ids.
func itoa(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

var _ context.Context // (ctx is taken from requests)
