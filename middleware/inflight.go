package middleware

import (
	"bytes"
	"hash/maphash"
	"math"
	"net/http"
	"strconv"
	"sync"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Cancellation binding (docs/sessions.md, "Cancellation"). A client
// cancels its own in-flight request with notifications/cancelled naming
// the request's JSON-RPC id (params.requestId). A server finds the request
// by that id within the request's session; a request without a session
// (a stateless server, every 2026-07-28 request) is found by its id alone,
// which every principal shares: mcp-go keys its in-flight requests by
// session ID and id, the session ID "" for all of them, so one principal's
// notifications/cancelled ended another's tools/call with id 1. The
// middleware therefore records the id of every request it passes, in the
// scope the server finds it in (the session for a 2025 request with one,
// none otherwise), and passes a notifications/cancelled only when the id
// it names is in flight in that scope for the notification's principal
// alone. Any other cancellation is answered as a server answers a
// notification, 202 Accepted with no body, without reaching the server:
// the client learns nothing of other principals' requests, and
// cancellation is best effort (MCP basic/utilities/cancellation).
const methodCancelled = "notifications/cancelled"

// inflightTable is the multiset of in-flight request ids, each a keyed
// hash of its scope and canonical id, with the hash of the principal that
// sent it (or shared: several did). Entries live while their request is
// served, so the table is bounded by the requests being served.
type inflightTable struct {
	seed maphash.Seed
	mu   sync.Mutex
	m    map[uint64]inflightEntry
}

type inflightEntry struct {
	owner  uint64
	n      int
	shared bool // requests of several principals have this key
}

func newInflightTable() *inflightTable {
	return &inflightTable{seed: maphash.MakeSeed(), m: map[uint64]inflightEntry{}}
}

// maxSafeInt is 2^53: integers below it are exact in a float64.
const maxSafeInt = 1 << 53

// canonicalID appends to dst a canonical text of the raw JSON-RPC id (a
// string or a number) under which every id a server may take for the same
// one falls together: equal numbers ("1", "1.0", "1e0"), and a string
// whose text is a number with that number (a server that formats ids as
// text, as mcp-go does with %v, takes "1" for 1). It is coarser than any
// server's equality, never finer: a coarser key only makes more
// cancellations refused. ok is false for any other id.
func canonicalID(dst, raw []byte) (out []byte, ok bool) {
	if len(raw) == 0 {
		return dst, false
	}
	text := raw
	if raw[0] == '"' {
		text = raw[1 : len(raw)-1]
		if bytes.IndexByte(text, '\\') >= 0 {
			s, ok := strictjson.String(raw)
			if !ok {
				return dst, false
			}
			text = []byte(s)
		}
	} else if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return dst, false // null, true, an object: no id to cancel
	}
	if isPlainInt(text) { // the common id: digits, no leading zero
		return append(dst, text...), true
	}
	if f, err := strconv.ParseFloat(string(text), 64); err == nil || (f != 0 && !math.IsNaN(f)) {
		if f == math.Trunc(f) && math.Abs(f) < maxSafeInt {
			return strconv.AppendInt(dst, int64(f), 10), true
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64), true
	}
	if raw[0] != '"' {
		return dst, false
	}
	// A string that is no number: itself, marked apart from numbers.
	return append(append(dst, '"'), text...), true
}

// isPlainInt reports whether b is "0" or a positive decimal integer
// without leading zero of at most 15 digits (below 2^53).
func isPlainInt(b []byte) bool {
	if len(b) == 0 || len(b) > 15 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// key is the table key of the raw id in its scope: the session ID sid,
// for a 2025 request (one with a session is found in it); none for a
// 2026-07-28 request (no sessions: a server ignores the header) or one
// without a session.
func (t *inflightTable) key(sid string, modern bool, raw []byte) (uint64, bool) {
	var buf [40]byte
	canon, ok := canonicalID(buf[:0], raw)
	if !ok {
		return 0, false
	}
	var h maphash.Hash
	h.SetSeed(t.seed)
	if !modern {
		_, _ = h.WriteString(sid)
	}
	_ = h.WriteByte(0)
	_, _ = h.Write(canon)
	return h.Sum64(), true
}

// ownerHash is the keyed hash of p.ID(), without building it.
func (t *inflightTable) ownerHash(p *Principal) uint64 {
	var h maphash.Hash
	h.SetSeed(t.seed)
	switch {
	case p.Anonymous:
		_, _ = h.WriteString(anonymousID)
	case p.ownerID != "":
		_, _ = h.WriteString(p.ownerID)
	default:
		var n [20]byte
		for _, f := range [...]string{p.Issuer, p.Subject, p.ClientID, p.Tenant} {
			_, _ = h.Write(strconv.AppendInt(n[:0], int64(len(f)), 10))
			_ = h.WriteByte(':')
			_, _ = h.WriteString(f)
		}
	}
	return h.Sum64()
}

// start records the request msg of p, if it is one (a method and an id),
// and returns its key for end.
func (t *inflightTable) start(h http.Header, p *Principal, msg *message) (uint64, bool) {
	if !msg.method.present || msg.id == nil {
		return 0, false
	}
	k, ok := t.key(msg.sid, isModern(h) || msg.version.present, msg.id)
	if !ok {
		return 0, false
	}
	owner := t.ownerHash(p)
	t.mu.Lock()
	e, found := t.m[k]
	switch {
	case !found:
		e = inflightEntry{owner: owner}
	case e.owner != owner:
		e.shared = true
	}
	e.n++
	t.m[k] = e
	t.mu.Unlock()
	return k, true
}

// end forgets one request of key k.
func (t *inflightTable) end(k uint64) {
	t.mu.Lock()
	if e := t.m[k]; e.n <= 1 {
		delete(t.m, k)
	} else {
		e.n--
		t.m[k] = e
	}
	t.mu.Unlock()
}

// mayCancel reports whether p's notifications/cancelled msg names a
// request in flight in its scope for p alone.
func (t *inflightTable) mayCancel(h http.Header, p *Principal, msg *message) bool {
	raw, ok := cancelledID(msg.body)
	if !ok {
		return false
	}
	k, ok := t.key(msg.sid, isModern(h) || msg.version.present, raw)
	if !ok {
		return false
	}
	owner := t.ownerHash(p)
	t.mu.Lock()
	e, found := t.m[k]
	t.mu.Unlock()
	return found && !e.shared && e.owner == owner
}

// cancelledID returns the raw params.requestId of a notifications/cancelled
// body, which the peek has checked (one object, no repeated name).
func cancelledID(body []byte) ([]byte, bool) {
	var id []byte
	err := strictjson.Walk(body, []string{"params"}, func(v *strictjson.Value, name []byte) error {
		if string(name) != "params" {
			return nil
		}
		return v.Members([]string{"requestId"}, func(v *strictjson.Value, name []byte) error {
			if string(name) != "requestId" {
				return nil
			}
			var err error
			id, err = v.Raw()
			return err
		})
	})
	return id, err == nil && id != nil
}
