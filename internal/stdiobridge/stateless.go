package stdiobridge

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpguard/mcpguard/internal/mcprev"
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// MCP 2026-07-28 has no sessions: every request carries its revision
// (the MCP-Protocol-Version header and params._meta), there is no
// initialize, and server/discover tells a client what the server offers.
// A stdio child speaks a session revision, so the bridge drives its
// lifecycle itself: the first stateless request of a user starts that
// user's stateless child, sends it initialize (revision 2025-11-25, no
// client capabilities) and notifications/initialized, and every later
// stateless request of the user goes to the same child. The child is
// bounded and reaped like a session's (max_per_user, idle_timeout), is
// not addressable by Mcp-Session-Id, and is never handed to another user.
//
// In front, the bridge speaks the stateless wire: server/discover is
// answered from the child's initialize result; each result gets
// resultType "complete", and the cacheable ones ttlMs 0 and cacheScope
// "private" (the child gives no cache hints, and a result may depend on
// the user); no Mcp-Session-Id is minted; GET and DELETE get 405. What a
// session child can do that a stateless client cannot receive is
// refused: a child's request to the client (sampling, elicitation,
// roots) is answered -32601 by the bridge, list-changed and subscribe
// capabilities are not advertised, and subscriptions/listen gets 404 with
// -32601.

const (
	// childRevision is the revision the bridge asks a stateless child for.
	childRevision = "2025-11-25"
	// modernRevision is the first stateless revision.
	modernRevision = mcprev.Modern
	metaVersionKey = "io.modelcontextprotocol/protocolVersion"
	metaServerInfo = "io.modelcontextprotocol/serverInfo"
)

// modernHeader reports whether r names a stateless revision in
// MCP-Protocol-Version.
func modernHeader(r *http.Request) bool {
	for _, v := range r.Header.Values("Mcp-Protocol-Version") {
		if mcprev.IsModern(v) {
			return true
		}
	}
	return false
}

var metaVersionNames = []string{metaVersionKey}

// modernMeta reports whether m's params._meta names a stateless revision.
func (b *Bridge) modernMeta(m message) bool {
	meta, _, _ := m.paramMember(&b.pool, metaNames, "_meta")
	if meta == nil || meta[0] != '{' {
		return false
	}
	modern := false
	_ = b.pool.MemberSpans(meta, metaVersionNames, func(n []byte, s, e int) error {
		if v, ok := strictjson.String(meta[s:e]); ok && string(n) == metaVersionKey {
			modern = mcprev.IsModern(v)
		}
		return nil
	})
	return modern
}

// sharedChild is a child shared by the requests of one user (stateless
// requests, or the sessions of a per-user route), started once.
type sharedChild struct {
	ready chan struct{} // closed when s or err is set
	s     *session
	err   error
}

// statelessKey is the key of a user's stateless child in Bridge.shared.
func statelessKey(u User) string { return "stateless\x00" + u.Key }

// sharedSession returns the running child of key for u, starting it and
// driving its initialize when there is none.
func (b *Bridge) sharedSession(ctx context.Context, key string, u User, stateless bool, init func(*session) error) (*session, error) {
	b.mu.Lock()
	if sc := b.shared[key]; sc != nil {
		b.mu.Unlock()
		t := time.NewTimer(b.cfg.StartTimeout + time.Second)
		defer t.Stop()
		select {
		case <-sc.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			return nil, errStartTimeout
		}
		if sc.err != nil {
			return nil, sc.err
		}
		return sc.s, nil
	}
	sc := &sharedChild{ready: make(chan struct{})}
	b.shared[key] = sc
	b.mu.Unlock()
	s, err := b.start(u, stateless, key)
	if err == nil {
		if err = init(s); err != nil {
			s.end("initialize failed: " + err.Error())
			s = nil
		}
	}
	b.mu.Lock()
	sc.s, sc.err = s, err
	if err != nil || s.isEnded() {
		if b.shared[key] == sc {
			delete(b.shared, key)
		}
		if err == nil {
			err = errEnded
			sc.err = err
		}
	}
	b.mu.Unlock()
	close(sc.ready)
	return s, err
}

var errStartTimeout = errors.New("stdiobridge: no answer to initialize within the start timeout")

// startFailed answers a request whose shared child (kind: "shared" or
// "stateless") could not be had, and reports whether err was such a
// failure: 503 with Retry-After at the process bound, 504 when the child
// did not answer initialize within the start timeout, nothing when the
// client left, else 502. The error itself is logged, never answered.
func (b *Bridge) startFailed(w http.ResponseWriter, err error, id []byte, u User, kind string) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, errBusy):
		b.log.Warn("stdio: process bound reached", "user", u.Key)
		w.Header().Set("Retry-After", retryAfter)
		writeJSONError(w, http.StatusServiceUnavailable, id, -32603, "Server busy")
	case errors.Is(err, errStartTimeout):
		writeJSONError(w, http.StatusGatewayTimeout, id, -32603, "Server did not start")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	default:
		b.log.Error("stdio: "+kind+" child not started", "user", u.Key, "error", err.Error())
		writeJSONError(w, http.StatusBadGateway, id, -32603, "Server unavailable")
	}
	return true
}

// initStateless drives a stateless child's lifecycle: initialize with
// no client capabilities, then notifications/initialized.
func (b *Bridge) initStateless(s *session) error {
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + childRevision +
		`","capabilities":{},"clientInfo":{"name":"mcpguard","version":"stdio-bridge"}}}`
	return s.initialize([]byte(body))
}

// initialize sends initialize to the child, waits for its result (the
// start timeout), keeps it and sends notifications/initialized.
func (s *session) initialize(body []byte) error {
	m, err := parseMessage(&s.b.pool, body)
	if err != nil {
		return err
	}
	c, err := s.send(m, "", false)
	if err != nil {
		return err
	}
	t := time.NewTimer(s.b.cfg.StartTimeout)
	defer t.Stop()
	select {
	case <-c.fin:
	case <-t.C:
		return errStartTimeout
	}
	if c.resp == nil {
		return errEnded
	}
	s.done(c)
	res, err := parseMessage(&s.b.pool, c.resp)
	if err != nil || !res.hasResult {
		return errors.New("initialize refused by the child")
	}
	var result []byte
	_ = s.b.pool.MemberSpans(res.raw, resultNames, func(n []byte, st, e int) error {
		if string(n) == "result" {
			result = res.raw[st:e:e]
		}
		return nil
	})
	if len(result) == 0 || result[0] != '{' {
		return errors.New("initialize result is not an object")
	}
	s.mu.Lock()
	s.initResult = result
	s.mu.Unlock()
	return s.ch.write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), s.b.cfg.RequestTimeout)
}

var resultNames = []string{"result"}

// postStateless serves a stateless (2026-07-28) POST of u.
func (b *Bridge) postStateless(w http.ResponseWriter, r *http.Request, u User, m message) {
	if m.kind != kindRequest {
		// No client-to-server notification is defined for this revision,
		// and there are no server-to-client requests to answer: a
		// cancellation is the client closing its stream.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch m.method {
	case "initialize":
		writeJSONError(w, http.StatusBadRequest, m.id, -32600, "initialize is not part of this protocol revision")
		return
	case "subscriptions/listen":
		writeJSONError(w, http.StatusNotFound, m.id, -32601, "Method not found")
		return
	}
	s, err := b.sharedSession(r.Context(), statelessKey(u), u, true, b.initStateless)
	if b.startFailed(w, err, m.id, u, "stateless") {
		return
	}
	if m.method == "server/discover" {
		s.mu.Lock()
		init := s.initResult
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(discoverResponse(&b.pool, m.id, init))
		return
	}
	s.request(w, r, m, "")
}

var (
	initNames = []string{"capabilities", "serverInfo", "instructions"}
	capNames  = []string{"experimental", "logging", "completions", "prompts", "resources", "tools", "extensions"}
)

// discoverResponse is the answer to server/discover built from a child's
// initialize result: its capabilities without list-changed notifications
// or subscriptions (the bridge offers no subscriptions/listen), its
// instructions, and its serverInfo in _meta.
func discoverResponse(pool *strictjson.Pool, id, init []byte) []byte {
	var caps, info, instr []byte
	_ = pool.MemberSpans(init, initNames, func(n []byte, s, e int) error {
		switch string(n) {
		case "capabilities":
			caps = init[s:e:e]
		case "serverInfo":
			info = init[s:e:e]
		case "instructions":
			instr = init[s:e:e]
		}
		return nil
	})
	out := []byte(`{"jsonrpc":"2.0","id":`)
	out = append(out, id...)
	out = append(out, `,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","supportedVersions":["`+modernRevision+`"],"capabilities":{`...)
	if len(caps) > 0 && caps[0] == '{' {
		n := 0
		_ = pool.MemberSpans(caps, capNames, func(name []byte, s, e int) error {
			v := caps[s:e:e]
			if v[0] != '{' {
				return nil
			}
			switch string(name) {
			case "prompts", "resources", "tools":
				v = []byte("{}") // listChanged and subscribe need subscriptions/listen
			case "experimental", "logging", "completions", "extensions":
			default:
				return nil
			}
			if n > 0 {
				out = append(out, ',')
			}
			n++
			out, _ = jsontext.AppendQuote(out, name)
			out = append(out, ':')
			out = append(out, v...)
			return nil
		})
	}
	out = append(out, '}')
	if _, ok := strictjson.String(instr); ok {
		out = append(out, `,"instructions":`...)
		out = append(out, instr...)
	}
	if len(info) > 0 && info[0] == '{' {
		out = append(out, `,"_meta":{"`+metaServerInfo+`":`...)
		out = append(out, info...)
		out = append(out, '}')
	}
	return append(out, "}}"...)
}

// cacheable are the methods whose 2026-07-28 results carry ttlMs and
// cacheScope.
var cacheable = map[string]bool{"tools/list": true, "prompts/list": true, "resources/list": true,
	"resources/templates/list": true, "resources/read": true}

var stampNames = []string{"result", "resultType", "ttlMs", "cacheScope"}

// modernResult returns a child's response to method in the stateless
// revision's shape: a result gets resultType "complete" when it has
// none, and a cacheable one ttlMs 0 when it has none and cacheScope
// "private" whatever it had: the child serves one user, so what it
// answers is that user's, and a "public" of its own (a server on a newer
// SDK says so of its lists) would let a shared cache hand one user's
// answer to another. An error response is returned as it is.
func modernResult(pool *strictjson.Pool, method string, resp []byte) []byte {
	var result []byte
	start := -1
	_ = pool.MemberSpans(resp, resultNames, func(n []byte, s, e int) error {
		if string(n) == "result" {
			result, start = resp[s:e:e], s
		}
		return nil
	})
	if start < 0 || len(result) == 0 || result[0] != '{' {
		return resp
	}
	has := map[string]bool{}
	scopeStart, scopeEnd := -1, -1
	_ = pool.MemberSpans(result, stampNames, func(n []byte, s, e int) error {
		has[string(n)] = true
		if string(n) == "cacheScope" {
			scopeStart, scopeEnd = s, e
		}
		return nil
	})
	if cacheable[method] && scopeStart >= 0 && string(result[scopeStart:scopeEnd]) != `"private"` {
		// Replaced first: the insertion below is at a lower offset.
		resp = splice(resp, start+scopeStart, start+scopeEnd, []byte(`"private"`))
		result = resp[start : start+len(result)-(scopeEnd-scopeStart)+len(`"private"`)]
	}
	var add []byte
	if !has["resultType"] {
		add = append(add, `"resultType":"complete",`...)
	}
	if cacheable[method] {
		if !has["ttlMs"] {
			add = append(add, `"ttlMs":0,`...)
		}
		if !has["cacheScope"] {
			add = append(add, `"cacheScope":"private",`...)
		}
	}
	if len(add) == 0 {
		return resp
	}
	if isEmptyObject(result) {
		add = add[:len(add)-1] // no member follows
	}
	return splice(resp, start+1, start+1, add)
}

// isEmptyObject reports whether obj (a valid JSON object) has no member.
func isEmptyObject(obj []byte) bool {
	for _, c := range obj[1:] {
		switch c {
		case ' ', '\t', '\n', '\r':
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}
