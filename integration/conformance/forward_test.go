package conformance

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestForwardFullDuplex: the fronts of the token and library ways
// (forward) keep a POST's SSE answer whole when the upstream sends its
// header while the front's transport still reads the client's body. The
// stdio bridge answers a request's SSE header at once, so in the
// conformance runs of the stdio way the transport's last read of the
// body (for io.EOF, after its last byte) now and then came after the
// header: net/http's HTTP/1 server had closed the body when the header
// went out, the read failed, the transport closed the upstream
// connection and ReverseProxy cut the stream; the suite's client, with
// no event ID to resume from, waited 60 s for an answer. Here the read
// is held (gate) until the client has the header, which makes that
// order certain.
func TestForwardFullDuplex(t *testing.T) {
	const event = `{"jsonrpc":"2.0","id":1,"result":{}}`
	send := make(chan struct{}) // the upstream writes its event
	up := listen(t)
	serve(t, up, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			t.Errorf("upstream: reading the body: %v", err)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		select {
		case <-send:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "event: message\ndata: "+event+"\n\n")
	}))
	u, _ := url.Parse("http://" + up.Addr().String() + "/mcp")
	fwd := forward(u, nil)

	gate := make(chan struct{})  // the transport's reads after the first
	wrote := make(chan error, 1) // how the transport's write of the request ended
	front := listen(t)
	serve(t, front, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &gatedBody{ReadCloser: r.Body, gate: gate, ctx: r.Context()}
		r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
			WroteRequest: func(i httptrace.WroteRequestInfo) { wrote <- i.Err },
		}))
		fwd.ServeHTTP(w, r)
	}))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+front.Addr().String()+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("answer %d %q, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// The header is out: let the transport finish reading the body, then
	// the upstream send its event.
	close(gate)
	select {
	case err := <-wrote:
		if err != nil {
			// The transport closes the upstream connection now, and
			// ReverseProxy cuts the answer.
			t.Fatalf("the front's transport failed to write the request once the answer had begun: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the front's transport did not finish writing the request")
	}
	close(send)
	var got []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			got = append(got, d)
		}
	}
	if len(got) != 1 || got[0] != event {
		t.Fatalf("events %q (stream ended: %v), want the upstream's one %s", got, sc.Err(), event)
	}
}

// gatedBody passes its first Read and holds the others until gate is
// closed.
type gatedBody struct {
	io.ReadCloser
	gate  chan struct{}
	ctx   context.Context
	reads int
}

func (b *gatedBody) Read(p []byte) (int, error) {
	if b.reads++; b.reads > 1 {
		select {
		case <-b.gate:
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
	return b.ReadCloser.Read(p)
}
