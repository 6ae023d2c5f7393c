// Package ssecut is a test helper: an [http.RoundTripper] that cuts the
// SSE answer to one POST mid-stream, as a network failure would, and
// notes the client's resumptions (GET with Last-Event-ID), for the
// resumption tests of the stdio bridge (proxy, integration).
//
//	c := &ssecut.Cutter{Marker: `"name":"wait"`, Events: 2}
//	client := &http.Client{Transport: c}
//	// ... call the tool; <-c.Cut(); ... c.Resumptions()
//
// Used as the Transport of an [net/http/httputil.ReverseProxy], the cut
// reaches a client in another process as a dropped connection: the
// reverse proxy aborts its answer when the body it copies fails.
package ssecut

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Cutter passes requests to Base and cuts the answer to the first POST
// whose body contains Marker after its first Events SSE events: it
// closes the connection and the body's reader gets
// [io.ErrUnexpectedEOF]. Its zero value with Marker set is ready; it is
// safe for concurrent use.
type Cutter struct {
	// Base carries the requests. Nil means [http.DefaultTransport].
	Base http.RoundTripper
	// Marker selects the POST to cut: the first whose body contains it.
	// Empty matches every POST.
	Marker string
	// Events is the number of SSE events of its answer passed before the
	// cut. Zero means 2 (the priming event and the first message).
	Events int

	mu          sync.Mutex
	cut         chan struct{}
	marked      int      // POSTs whose body contained Marker
	cutting     bool     // the POST to cut has been chosen
	lastID      string   // the ID of the last event passed on the cut stream
	resumptions []string // Last-Event-ID of each GET that had one
}

// cutChan returns the channel closed at the cut; c.mu is held.
func (c *Cutter) cutChan() chan struct{} {
	if c.cut == nil {
		c.cut = make(chan struct{})
	}
	return c.cut
}

// Cut returns a channel closed once the connection has been cut.
func (c *Cutter) Cut() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cutChan()
}

// Marked returns the number of POSTs whose body contained Marker.
func (c *Cutter) Marked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.marked
}

// LastEventID returns the last event ID the cut stream passed on before
// the cut, the one its client resumes from ("" before the cut, or if no
// event had an ID).
func (c *Cutter) LastEventID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastID
}

// Resumptions returns the Last-Event-ID of each GET that carried one, in
// the order they were sent.
func (c *Cutter) Resumptions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.resumptions...)
}

// RoundTrip implements [http.RoundTripper].
func (c *Cutter) RoundTrip(r *http.Request) (*http.Response, error) {
	cut := false
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(c.Marker)) {
			c.mu.Lock()
			c.marked++
			cut = !c.cutting
			c.cutting = true
			c.mu.Unlock()
		}
	}
	if id := r.Header.Get("Last-Event-ID"); r.Method == http.MethodGet && id != "" {
		c.mu.Lock()
		c.resumptions = append(c.resumptions, id)
		c.mu.Unlock()
	}
	base := c.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err == nil && cut {
		events := c.Events
		if events == 0 {
			events = 2
		}
		resp.Body = &cutBody{rc: resp.Body, br: bufio.NewReader(resp.Body), c: c, left: events}
	}
	return resp, err
}

// cutBody passes lines on until left events have ended, then closes the
// connection and fails.
type cutBody struct {
	rc      io.ReadCloser
	br      *bufio.Reader
	c       *Cutter
	pending []byte
	left    int
	id      string // the last event ID read
	cut     bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.cut {
			return 0, io.ErrUnexpectedEOF
		}
		line, err := b.br.ReadBytes('\n')
		if err != nil {
			return 0, err
		}
		b.pending = line
		field := strings.TrimRight(string(line), "\r\n")
		if v, ok := strings.CutPrefix(field, "id:"); ok {
			b.id = strings.TrimPrefix(v, " ")
		}
		if field == "" {
			if b.left--; b.left == 0 {
				b.cut = true
				b.rc.Close() // the connection goes
				b.c.mu.Lock()
				b.c.lastID = b.id
				close(b.c.cutChan())
				b.c.mu.Unlock()
			}
		}
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

func (b *cutBody) Close() error { return b.rc.Close() }
