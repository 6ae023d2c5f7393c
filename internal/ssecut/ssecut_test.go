package ssecut

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the standard library only, and imported by tests only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{}.Check(t, ".")
	deptest.CheckNotImported(t, deptest.Module+"/internal/ssecut")
}

// sseServer answers every request with four SSE events, the first
// without data, the third without an ID.
func sseServer(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: s-0\ndata:\n\nid: s-1\ndata: one\n\ndata: two\n\nid:s-3\r\ndata: three\r\n\r\n")
	}))
	t.Cleanup(ts.Close)
	return ts
}

func send(t *testing.T, c *http.Client, method, url, body string, h http.Header) (string, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestCutter: the first POST with the marker loses its connection after
// Events events (the client reads those, then io.ErrUnexpectedEOF); other
// POSTs, the next one with the marker included, pass whole; GETs with
// Last-Event-ID are noted in order.
func TestCutter(t *testing.T) {
	const whole = "id: s-0\ndata:\n\nid: s-1\ndata: one\n\ndata: two\n\nid:s-3\r\ndata: three\r\n\r\n"
	for _, tc := range []struct {
		events   int
		passed   string
		lastID   string
		sequence []string // POST bodies before the one cut
	}{
		{0, "id: s-0\ndata:\n\nid: s-1\ndata: one\n\n", "s-1", nil},
		{1, "id: s-0\ndata:\n\n", "s-0", []string{"other"}},
		{3, "id: s-0\ndata:\n\nid: s-1\ndata: one\n\ndata: two\n\n", "s-1", []string{"other", "more"}},
		{4, whole, "s-3", nil},
	} {
		t.Run(fmt.Sprint(tc.events), func(t *testing.T) {
			ts := sseServer(t)
			c := &Cutter{Marker: "MARK", Events: tc.events}
			client := &http.Client{Transport: c}
			for _, b := range tc.sequence {
				if got, err := send(t, client, "POST", ts.URL, b, nil); err != nil || got != whole {
					t.Fatalf("POST %q = %q, %v; want it whole", b, got, err)
				}
			}
			select {
			case <-c.Cut():
				t.Fatal("cut before the POST with the marker")
			default:
			}
			got, err := send(t, client, "POST", ts.URL, "a MARK b", nil)
			if !errors.Is(err, io.ErrUnexpectedEOF) || got != tc.passed {
				t.Fatalf("the marked POST read %q, %v; want %q, io.ErrUnexpectedEOF", got, err, tc.passed)
			}
			select {
			case <-c.Cut():
			default:
				t.Fatal("Cut not closed after the cut")
			}
			if got := c.LastEventID(); got != tc.lastID {
				t.Errorf("LastEventID = %q, want %q", got, tc.lastID)
			}
			if got, err := send(t, client, "POST", ts.URL, "MARK again", nil); err != nil || got != whole {
				t.Errorf("the second marked POST = %q, %v; want it whole", got, err)
			}
			if got := c.Marked(); got != 2 {
				t.Errorf("Marked = %d, want 2", got)
			}
			for _, id := range []string{"", "s-1", "s-3"} {
				if got, err := send(t, client, "GET", ts.URL, "", http.Header{"Last-Event-Id": {id}}); err != nil || got != whole {
					t.Errorf("GET Last-Event-ID %q = %q, %v; want it whole", id, got, err)
				}
			}
			if got := c.Resumptions(); strings.Join(got, ",") != "s-1,s-3" {
				t.Errorf("Resumptions = %q, want [s-1 s-3]", got)
			}
		})
	}
}
