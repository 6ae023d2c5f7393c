package stdiobridge

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
)

// With Config.PerUser, the sessions of one user share one child: the
// first initialize of the user starts it and is passed to it (without
// roots unless ForwardRoots), with notifications/initialized sent by the
// bridge; every later initialize of the user gets the child's result
// again, under a session id of its own. The child's request ids are the
// bridge's, so the sessions' requests never collide; a cancellation
// names a request of its own session; a notification of the child not
// tied to a request goes to each of its sessions once, on that session's
// own streams (route.go), a request of the child to the oldest request in
// flight (a child asks while it serves one) or one GET stream. Deleting a session ends the child with the last one. A
// child keeps at most MaxQueued sessions: a later initialize ends the
// oldest (404 next).

// sessionKey is the key of a user's shared session child in b.shared.
func sessionKey(u User) string { return "session\x00" + u.Key }

// initializeShared answers initialize m with a new session on u's
// shared child.
func (b *Bridge) initializeShared(w http.ResponseWriter, r *http.Request, u User, m message) {
	body := m.raw
	if !b.cfg.ForwardRoots {
		body = b.withoutRoots(m)
	}
	s, err := b.sharedSession(r.Context(), sessionKey(u), u, false, func(s *session) error { return s.initialize(body) })
	if b.startFailed(w, err, m.id, u, "shared") {
		return
	}
	var idb [16]byte
	_, _ = rand.Read(idb[:])
	id := hex.EncodeToString(idb[:])
	s.mu.Lock()
	init, ended := s.initResult, s.ended
	s.mu.Unlock()
	evicted := ""
	b.mu.Lock()
	if !ended && b.sessions[s.id] == s {
		b.views[id] = s
		s.mu.Lock() // b.mu, then s.mu
		s.scopes = append(s.scopes, id)
		s.mu.Unlock()
		ids := append(b.viewIDs[s], id)
		if len(ids) > b.cfg.MaxQueued {
			// A user who opens sessions without end (a client that never
			// sends DELETE reconnects with a new one) keeps the newest.
			evicted = ids[0]
			delete(b.views, evicted)
			ids = slices.Delete(ids, 0, 1)
		}
		b.viewIDs[s] = ids
	} else {
		ended = true
	}
	b.mu.Unlock()
	if evicted != "" {
		s.dropScope(evicted)
		s.log.Info("stdio: the oldest session of the user's child ended: max_queued sessions", "ended", evicted[:8])
	}
	if ended {
		writeJSONError(w, http.StatusBadGateway, m.id, -32603, "Server unavailable")
		return
	}
	out := []byte(`{"jsonrpc":"2.0","id":`)
	out = append(out, m.id...)
	out = append(out, `,"result":`...)
	out = append(out, init...)
	out = append(out, '}')
	w.Header().Set("Mcp-Session-Id", id)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}
