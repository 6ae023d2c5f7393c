package middleware

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/internal/fairlru"
)

// sharedEventStore is a stateless server with one event store for every
// stream, as mcp-go's WithStateLess and WithEventStore: a POST is answered
// as SSE with two events carrying the caller's Authorization (its
// secret), their IDs numbered across all callers (a request with
// "X-Send-ID" gets that ID for its first event instead); a GET with
// Last-Event-ID replays the events after it on the stream that sent it,
// whoever that stream went to, as mcp-go's InMemoryEventStore does.
type sharedEventStore struct {
	mu      sync.Mutex
	seq     int
	streams [][][2]string     // per stream, its events: ID, data
	index   map[string][2]int // event ID -> stream, position
	reached int               // requests served
}

func (s *sharedEventStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reached++
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		if at, ok := s.index[r.Header.Get("Last-Event-ID")]; ok {
			for _, ev := range s.streams[at[0]][at[1]+1:] {
				fmt.Fprintf(w, "id: %s\ndata: %s\n\n", ev[0], ev[1])
			}
		}
		return
	}
	if s.index == nil {
		s.index = map[string][2]int{}
	}
	var stream [][2]string
	for i := range 2 {
		s.seq++
		id := strconv.Itoa(s.seq)
		if v := r.Header.Get("X-Send-ID"); v != "" && i == 0 {
			id = v
		}
		data := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":%q,"n":%d}}`, r.Header.Get("Authorization"), i)
		s.index[id] = [2]int{len(s.streams), i}
		stream = append(stream, [2]string{id, data})
		fmt.Fprintf(w, "id: %s\ndata: %s\n\n", id, data)
	}
	s.streams = append(s.streams, stream)
}

func (s *sharedEventStore) reachedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reached
}

// TestResumeBoundToRecipient: without a session, a Last-Event-ID is
// passed only on the path it was sent on, to the principal it was sent
// to alone; every other resumption is 400 before the server, which would
// replay another principal's answers.
func TestResumeBoundToRecipient(t *testing.T) {
	f := newFixture(t, nil)
	srv := &sharedEventStore{}
	h := f.m.Handler(srv)
	token := func(sub string) string {
		return f.iss.Token(t, authtest.Token{Subject: sub, Tenant: "tenant-" + sub, Scopes: []string{"mcp", "tools:read"}})
	}
	alice, bob, carol := token("alice"), token("bob"), token("carol")
	do := func(method, tok string, hdr map[string][]string) *httptest.ResponseRecorder {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(rpcBody(legacyRev, "tools/list", ""))
		}
		r := httptest.NewRequest(method, resource, body)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("MCP-Protocol-Version", legacyRev)
		r.Header.Set("Authorization", "Bearer "+tok)
		for k, v := range hdr {
			r.Header[k] = v
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	post := func(tok, id string) {
		t.Helper()
		var hdr map[string][]string
		if id != "" {
			hdr = map[string][]string{"X-Send-Id": {id}}
		}
		if w := do(http.MethodPost, tok, hdr); w.Code != 200 || !strings.Contains(w.Body.String(), "id: ") {
			t.Fatalf("POST: %d %q", w.Code, w.Body)
		}
	}
	post(alice, "") // ids 1, 2
	post(bob, "")   // ids 3, 4
	post(alice, "shared")
	post(carol, "shared")

	for _, tc := range []struct {
		name   string
		tok    string
		ids    []string
		want   int
		secret string // in the answer, when 200
	}{
		{"own ID", alice, []string{"1"}, 200, alice},
		{"own last ID", bob, []string{"4"}, 200, ""},
		{"another principal's ID", bob, []string{"1"}, 400, ""},
		{"another principal's last ID", alice, []string{"4"}, 400, ""},
		{"never sent", alice, []string{"99"}, 400, ""},
		{"ID sent to two principals", alice, []string{"shared"}, 400, ""},
		{"two headers", alice, []string{"1", "1"}, 400, ""},
		{"empty: nothing to resume after", bob, []string{""}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.reachedCount()
			w := do(http.MethodGet, tc.tok, map[string][]string{"Last-Event-Id": tc.ids})
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			reached := srv.reachedCount() - before
			if tc.want == 400 {
				if got := w.Body.String(); got != bodyInvalidMessage || reached != 0 {
					t.Errorf("body %s, server reached %d times", got, reached)
				}
				return
			}
			if reached != 1 || (tc.secret != "" && !strings.Contains(w.Body.String(), tc.secret)) {
				t.Errorf("server reached %d times, answer %s", reached, w.Body)
			}
		})
	}
}

// TestResumeExpires: an event ID is resumable for the session idle
// timeout after it was last sent.
func TestResumeExpires(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	f := newFixture(t, func(c *Config) {
		c.Sessions.IdleTimeout = time.Minute
		c.Now = func() time.Time { return now }
	})
	srv := &sharedEventStore{}
	h := f.m.Handler(srv)
	tok := f.iss.Token(t, authtest.Token{Subject: "alice", Scopes: []string{"mcp", "tools:read"}})
	req := func(method string, lastID string) int {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(rpcBody(legacyRev, "tools/list", ""))
		}
		r := httptest.NewRequest(method, resource, body)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("MCP-Protocol-Version", legacyRev)
		r.Header.Set("Authorization", "Bearer "+tok)
		if lastID != "" {
			r.Header.Set("Last-Event-ID", lastID)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := req(http.MethodPost, ""); code != 200 {
		t.Fatalf("POST: %d", code)
	}
	now = now.Add(59 * time.Second)
	if code := req(http.MethodGet, "1"); code != 200 {
		t.Fatalf("resume within the timeout: %d", code)
	}
	now = now.Add(2 * time.Second)
	if code := req(http.MethodGet, "1"); code != 400 {
		t.Fatalf("resume after the timeout: %d, want 400", code)
	}
}

// refEventTable is the event table as first written on internal/fairlru
// (1506ab2): the reference TestEventTableMatchesFairLRU holds eventTable
// to.
type refEventTable struct {
	c   *fairlru.Cache[string, refEventOwner]
	ttl time.Duration
}

type refEventOwner struct {
	owner  string
	shared bool
}

func (t *refEventTable) record(path, id, owner string, now time.Time) {
	k := path + "\x00" + id
	v, part := refEventOwner{owner: owner}, owner
	if e := t.c.Peek(k, now); e != nil {
		v, part = e.Value, e.Partition
		v.shared = v.shared || v.owner != owner
	}
	t.c.Add(part, k, v, now.Add(t.ttl), now)
}

func (t *refEventTable) owns(path, id, owner string, now time.Time) bool {
	e := t.c.Peek(path+"\x00"+id, now)
	return e != nil && !e.Value.shared && e.Value.owner == owner
}

// TestEventTableMatchesFairLRU: the event table answers every resumption
// as the fairlru table it replaced (the same bound, fair eviction, expiry
// and sharing), over seeded random sequences of sendings and lookups by
// four principals on two paths, the clock moving forward by 1 ms a step
// and at times up to a third of the TTL more, for several bounds.
func TestEventTableMatchesFairLRU(t *testing.T) {
	const ttl = 30 * time.Second
	owners := []string{"o0", "o1", "o2", "o3"}
	paths := []string{"/mcp", "/other"}
	for _, max := range []int{1, 2, 5, 16} {
		for seed := range uint64(20) {
			t.Run(fmt.Sprintf("max=%d/seed=%d", max, seed), func(t *testing.T) {
				rnd := rand.New(rand.NewPCG(seed, 1))
				now := time.Unix(1700000000, 0)
				got := newEventTable(max, ttl, func() time.Time { return now })
				want := &refEventTable{c: fairlru.New[string, refEventOwner](fairlru.Config{MaxEntries: max}), ttl: ttl}
				for step := range 400 {
					// Strictly forward: fairlru breaks ties of equal expiries
					// by its heap, this table by the order of sending.
					now = now.Add(time.Millisecond)
					if rnd.IntN(10) == 0 {
						now = now.Add(time.Duration(rnd.Int64N(int64(ttl / 3))))
					}
					path, id, owner := paths[rnd.IntN(len(paths))], strconv.Itoa(rnd.IntN(12)), owners[min(rnd.IntN(6), 3)]
					if rnd.IntN(3) > 0 {
						got.record(path, []byte(id), owner)
						want.record(path, id, owner, now)
						if n := len(got.m); n != want.c.Len() || n > max {
							t.Fatalf("step %d: %d IDs held, fairlru %d, max %d", step, n, want.c.Len(), max)
						}
						continue
					}
					p := &Principal{ownerID: owner}
					if g, w := got.owns(path, id, p), want.owns(path, id, owner, now); g != w {
						t.Fatalf("step %d: owns(%q, %q, %s) = %v, fairlru %v", step, path, id, owner, g, w)
					}
				}
			})
		}
	}
}

// BenchmarkEventTableRecord: one principal's stream sends IDs 1000 to
// 1999 again and again on one path (as a sessionless server numbering
// each stream's events), into a table of the default bound.
func BenchmarkEventTableRecord(b *testing.B) {
	tb := newEventTable(defaultMaxSessions, time.Hour, time.Now)
	ids := make([][]byte, 1000)
	for i := range ids {
		ids[i] = []byte(strconv.Itoa(1000 + i))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tb.record("/mcp", ids[i%len(ids)], "bench-owner")
		i++
	}
}

// TestResumeIsTheUsers: without a session, an event ID is the user's, as
// its sessions are: alice's second client resumes after an event sent to
// her first (400 with SessionConfig.BindClient), bob does not; and a
// flood of event IDs from one user through 50 client IDs evicts only
// that user's IDs, never bob's.
func TestResumeIsTheUsers(t *testing.T) {
	for _, bind := range []bool{false, true} {
		t.Run(fmt.Sprintf("bind_client=%v", bind), func(t *testing.T) {
			f := newFixture(t, func(c *Config) {
				c.Sessions.BindClient = bind
				c.Sessions.Max = 8
			})
			srv := &sharedEventStore{}
			h := f.m.Handler(srv)
			token := func(sub, client string) string {
				return f.iss.Token(t, authtest.Token{Subject: sub, ClientID: client, Scopes: []string{"mcp", "tools:read"}})
			}
			do := func(method, tok, lastID, sendID string) int {
				t.Helper()
				var body io.Reader
				if method == http.MethodPost {
					body = strings.NewReader(rpcBody(legacyRev, "tools/list", ""))
				}
				r := httptest.NewRequest(method, resource, body)
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
				r.Header.Set("MCP-Protocol-Version", legacyRev)
				r.Header.Set("Authorization", "Bearer "+tok)
				if lastID != "" {
					r.Header.Set("Last-Event-ID", lastID)
				}
				if sendID != "" {
					r.Header.Set("X-Send-ID", sendID)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w.Code
			}
			first, second := token("alice", "client-1"), token("alice", "https://app.example/second")
			bob := token("bob", "client-1")
			if code := do(http.MethodPost, first, "", "alice-1"); code != 200 {
				t.Fatalf("POST: %d", code)
			}
			if code := do(http.MethodPost, bob, "", "bob-1"); code != 200 {
				t.Fatalf("POST: %d", code)
			}
			want := 200
			if bind {
				want = 400
			}
			if code := do(http.MethodGet, second, "alice-1", ""); code != want {
				t.Errorf("alice's second client resumes after her first's event: %d, want %d", code, want)
			}
			if code := do(http.MethodGet, bob, "alice-1", ""); code != 400 {
				t.Errorf("bob resumes after alice's event: %d, want 400", code)
			}
			// 50 clients of alice's, two event IDs each, in a table of 8.
			for i := range 50 {
				if code := do(http.MethodPost, token("alice", fmt.Sprintf("https://c%d.example/client", i)), "", ""); code != 200 {
					t.Fatalf("flood POST %d: %d", i, code)
				}
			}
			if code := do(http.MethodGet, bob, "bob-1", ""); code != 200 {
				t.Errorf("bob resumes after his event once alice flooded the table: %d, want 200", code)
			}
		})
	}
}
