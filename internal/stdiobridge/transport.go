package stdiobridge

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// Transport returns a RoundTripper that serves each request with the
// bridge in process, streaming the answer, for the proxy's forwarder.
func (b *Bridge) Transport() http.RoundTripper { return handlerTransport{b} }

var errPanic = errors.New("stdiobridge: handler panicked")

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	rw := &pipeResponse{hdr: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			// A handler that panics answers 500 (a server's recovery would
			// do so), not a crash of the proxy.
			if recover() != nil {
				rw.WriteHeader(http.StatusInternalServerError)
				_ = pw.CloseWithError(errPanic)
				return
			}
			rw.WriteHeader(http.StatusOK)
			_ = pw.Close()
		}()
		if req.Body != nil {
			defer req.Body.Close()
		}
		t.h.ServeHTTP(rw, req)
	}()
	<-rw.ready
	return &http.Response{
		Status: http.StatusText(rw.status), StatusCode: rw.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rw.sent, Body: pr, ContentLength: -1, Request: req,
	}, nil
}

// pipeResponse is the ResponseWriter of an in-process request: the
// header is taken at WriteHeader, the body goes through a pipe that the
// reader's Close ends (a later Write fails).
type pipeResponse struct {
	hdr    http.Header
	sent   http.Header
	status int
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
}

func (p *pipeResponse) Header() http.Header { return p.hdr }

func (p *pipeResponse) WriteHeader(status int) {
	p.once.Do(func() {
		p.status = status
		p.sent = p.hdr.Clone()
		close(p.ready)
	})
}

func (p *pipeResponse) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return p.pw.Write(b)
}

// Flush is a no-op: every Write reaches the reader as it happens.
func (p *pipeResponse) Flush() {}

// errCut ends an in-process answer whose write deadline has passed.
var errCut = errors.New("stdiobridge: answer cut")

// SetWriteDeadline, for http.ResponseController: a deadline that has
// passed ends the body at once (a blocked Write and later ones fail, the
// reader gets errCut), as on a connection; a later one is not kept.
func (p *pipeResponse) SetWriteDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		_ = p.pw.CloseWithError(errCut)
	}
	return nil
}
