package stdiobridge

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// TestKeepingUpNotCut: per_user: a client that reads its GET stream as
// fast as it comes is not cut as one that does not keep up when the
// session's event bound is held by events another client session has
// already read (the child's messages on its call in flight, kept for
// resumption): a burst of a few notifications reaches it whole, the
// bound dropping the other stream's events it has had first.
func TestKeepingUpNotCut(t *testing.T) {
	const maxQ = 16
	h := newHostile(t, Config{PerUser: true, MaxQueued: maxQ}, nil)
	bs := open(t, h, "alice")
	waitB := inflight(t, h, "alice", bs, "5") // read to its end meanwhile
	waitFor(t, func() bool { return pendingCalls(h, bs) == 1 })
	// The child's messages fill the bound, all on bs's call (the only
	// session), which its client reads.
	flood := func(sid string, n int) {
		resp := rawPostAccept(t, h.srv.URL, "alice", sid, "application/json", toolBody("2", "flood", `{"n":`+itoaS(int64(n))+`,"size":1,"after":true}`))
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	flood(bs, maxQ-1)
	s, _ := h.b.lookup(bs)
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.evN == maxQ-1 })
	as := open(t, h, "alice")
	get := openGET(t, h, "alice", as)
	defer get.Body.Close()
	flood(as, 8)
	r := sseReader{bufio.NewReader(get.Body)}
	var got []string
	for range 8 {
		ev, err := r.next()
		if err != nil {
			break
		}
		got = append(got, notes([]string{ev.data})...)
	}
	if want := "f0,f1,f2,f3,f4,f5,f6,f7"; strings.Join(got, ",") != want {
		t.Errorf("a client reading its GET stream as it comes got %q, want %s: cut as not keeping up while the bound held events already read", got, want)
	}
	tool(t, h, "alice", bs, "release", "")
	<-waitB
}
