package answer

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// refEvent is an event as a client dispatches it (HTML Living Standard
// §9.2.6), read by refParse.
type refEvent struct{ data, id string }

// refParse is an independent reading of an event stream, as a client
// does it on the whole input at once: one leading BOM stripped, lines
// ending with CRLF, LF or CR, an incomplete last line ignored. It returns
// the dispatched events and the last event ID after the last complete
// event.
func refParse(s string) (events []refEvent, lastID string) {
	s = strings.TrimPrefix(s, "\uFEFF")
	var data strings.Builder
	var id string
	hasData := false
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			return events, lastID
		}
		line := s[:i]
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			s = s[i+2:]
		} else {
			if s[i] == '\r' && i+1 == len(s) {
				// A CR at the very end: the line is complete whatever follows.
				s = ""
			} else {
				s = s[i+1:]
			}
		}
		if line == "" {
			lastID = id
			if hasData {
				d := data.String()
				d = strings.TrimSuffix(d, "\n")
				if d != "" {
					events = append(events, refEvent{d, id})
				}
			}
			data.Reset()
			hasData = false
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch name {
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		case "id":
			if !strings.ContainsRune(value, 0) {
				id = value
			}
		}
	}
}

// refIDs is the client's last event ID after each complete event of s,
// where it is not empty: the IDs a client reading s may resume from. It
// reads s as refParse does.
func refIDs(s string) []string {
	s = strings.TrimPrefix(s, "\uFEFF")
	var ids []string
	var id string
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			return ids
		}
		line := s[:i]
		switch {
		case s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n':
			s = s[i+2:]
		case s[i] == '\r' && i+1 == len(s):
			s = ""
		default:
			s = s[i+1:]
		}
		if line == "" {
			if id != "" {
				ids = append(ids, id)
			}
			continue
		}
		if name, value, found := strings.Cut(line, ":"); name == "id" {
			if found {
				value = strings.TrimPrefix(value, " ")
			}
			if !strings.ContainsRune(value, 0) {
				id = value
			}
		}
	}
}

// idLog is an EventIDRecorder that keeps what it is told.
type idLog map[string]bool

func (l idLog) EventID(id []byte) { l[string(id)] = true }

// run passes in through a Writer with rw, written in pieces of the
// lengths in cuts (cycled), and returns the output.
func run(in []byte, cuts []byte, rw Rewriter, max int) (string, error) {
	return runWith(in, cuts, rw, Options{MaxMessageBytes: max})
}

// runWith is run with opts.
func runWith(in []byte, cuts []byte, rw Rewriter, opts Options) (string, error) {
	rec := httptest.NewRecorder()
	var w Writer
	w.Reset(rec, rw, opts)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for i, k := 0, 0; i < len(in); k++ {
		n := len(in)
		if len(cuts) > 0 {
			n = int(cuts[k%len(cuts)])%17 + 1
		}
		end := min(i+n, len(in))
		if _, err := w.Write(in[i:end]); err != nil {
			return "", err
		}
		if k%3 == 0 {
			w.Flush()
		}
		i = end
	}
	err := w.Finish()
	return rec.Body.String(), err
}

var replaceX = rewriteFunc(func([]byte) ([]byte, error) { return []byte("X"), nil })

// FuzzSSE checks the event splitter against refParse, for any stream and
// any way of cutting it into writes: kept events reach the client exactly
// as sent; replaced ones carry exactly the replacement; dropped ones leave
// no data but the same last event ID; and no event is ever dispatched
// with data the Rewriter was not shown.
func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tasks/status\",\"params\":{\"taskId\":\"t\"}}\n\n",
		"id: 1\nevent: message\ndata: a\ndata: b\n\n: ping\n\nretry: 10\n\n",
		"data: a\r\n\r\ndata: b\r\rdata: c\n\n",
		"\uFEFFdata: x\n\n\uFEFFdata: y\n\n",
		"data:x\ndata\nid\x00:q\nid: 2\n\ndata: partial",
		"\r\n\r\n\n\r\r",
	} {
		f.Add([]byte(s), []byte{1, 5, 2})
	}
	f.Fuzz(func(t *testing.T, in, cuts []byte) {
		if len(in) > 1<<16 {
			return
		}
		wantEvents, wantID := refParse(string(in))
		seen := map[string]bool{}
		record := rewriteFunc(func(m []byte) ([]byte, error) { seen[string(m)] = true; return m, nil })

		kept, err := run(in, cuts, record, 1<<20)
		if err != nil {
			t.Fatalf("identity: %v", err)
		}
		if whole, _ := run(in, nil, identity, 1<<20); whole != kept {
			t.Fatalf("output depends on the writes: %q vs %q", kept, whole)
		}
		if !bytes.HasPrefix(in, []byte(kept)) && !strings.HasPrefix(kept, ":\n") {
			t.Fatalf("kept output %q is not a prefix of the input", kept)
		}
		gotEvents, gotID := refParse(kept)
		if len(gotEvents) != len(wantEvents) || gotID != wantID {
			t.Fatalf("kept: %q, last id %q; want %q, %q", gotEvents, gotID, wantEvents, wantID)
		}
		for i := range gotEvents {
			if gotEvents[i] != wantEvents[i] {
				t.Fatalf("kept event %d: %q, want %q", i, gotEvents[i], wantEvents[i])
			}
			if !seen[gotEvents[i].data] {
				t.Fatalf("event %q reached the client unseen", gotEvents[i].data)
			}
		}

		dropped, _ := run(in, cuts, dropAll, 1<<20)
		if evs, id := refParse(dropped); len(evs) != 0 || id != wantID {
			t.Fatalf("dropped: %q, last id %q; want none, %q", evs, id, wantID)
		}

		replaced, _ := run(in, cuts, replaceX, 1<<20)
		evs, id := refParse(replaced)
		if len(evs) != len(wantEvents) || id != wantID {
			t.Fatalf("replaced: %q, last id %q; want %d events, %q", evs, id, len(wantEvents), wantID)
		}
		for _, e := range evs {
			if e.data != "X" {
				t.Fatalf("replaced event %q, want X", e.data)
			}
		}

		// Every event ID a client may resume from was reported, kept,
		// replaced, dropped or over the bound, and none that the input
		// does not hold.
		for _, tc := range []struct {
			rw  Rewriter
			max int
		}{{identity, 1 << 20}, {dropAll, 1 << 20}, {replaceX, 1 << 20}, {identity, 24}} {
			ids := idLog{}
			out, _ := runWith(in, cuts, tc.rw, Options{MaxMessageBytes: tc.max, EventIDs: ids})
			for _, id := range refIDs(out) {
				if !ids[id] {
					t.Fatalf("event ID %q reached the client unreported (reported %v)", id, ids)
				}
			}
			for id := range ids {
				if !strings.Contains(string(in), id) {
					t.Fatalf("reported event ID %q is not in the input", id)
				}
			}
		}

		// A small bound: whatever passes was shown to the Rewriter.
		clear(seen)
		small, err := run(in, cuts, record, 24)
		if err != nil && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("small bound: %v", err)
		}
		evs, _ = refParse(small)
		for _, e := range evs {
			if !seen[e.data] {
				t.Fatalf("small bound: event %q reached the client unseen", e.data)
			}
		}
	})
}

// FuzzParse checks that Parse never panics and agrees with Member on the
// envelope it reads.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"a"}]}}`,
		`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"a","status":"completed"}}`,
		`{"method":"x","METHOD":"y"}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var m Message
		if err := Parse(nil, in, &m); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		v, _, _, ok, err := Member(nil, in, envelope, "result")
		if err != nil || ok != (m.Result != nil) || string(v) != string(m.Result) {
			t.Fatalf("Member result %q %v %v, Parse %q", v, ok, err, m.Result)
		}
	})
}
