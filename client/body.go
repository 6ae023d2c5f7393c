package client

import (
	"bytes"
	"io"
	"net/http"
)

// maxReplayBytes is the largest request body the transport buffers in
// memory so that it can resend it after a re-authorization, when the
// request has no GetBody (requests built by http.NewRequest from a
// *bytes.Buffer, *bytes.Reader or *strings.Reader have one and are never
// buffered). A larger body is streamed once, and a 401 or 403 to it is
// returned as is.
const maxReplayBytes = 4 << 20

// maxDrainBytes bounds how much of a challenged response body is read
// before closing it, so that the connection can be reused.
const maxDrainBytes = 64 << 10

// replay produces the body of each attempt of one RoundTrip.
type replay struct {
	orig       io.ReadCloser // the caller's body, used for the first attempt
	getBody    func() (io.ReadCloser, error)
	length     int64 // ContentLength for buffered bodies; -1 if unchanged
	replayable bool
	used       bool // orig was handed out
}

// newReplay prepares req's body. A body without GetBody is read up to
// maxReplayBytes+1 bytes; on a read error the body is closed and the error
// returned.
func newReplay(req *http.Request) (*replay, error) {
	r := &replay{orig: req.Body, length: -1}
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		r.replayable = true
		r.getBody = func() (io.ReadCloser, error) { return req.Body, nil }
	case req.GetBody != nil:
		r.replayable = true
		r.getBody = req.GetBody
	default:
		buf, err := io.ReadAll(io.LimitReader(req.Body, maxReplayBytes+1))
		if err != nil {
			_ = req.Body.Close()
			return nil, err
		}
		if len(buf) > maxReplayBytes {
			// Too large: stream it once, unchanged.
			r.orig = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(buf), req.Body), req.Body}
			return r, nil
		}
		_ = req.Body.Close()
		r.replayable = true
		r.length = int64(len(buf))
		r.getBody = func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(buf)), nil
		}
		r.orig, _ = r.getBody()
	}
	return r, nil
}

// apply sets the body of the attempt r2 (a clone of the caller's request).
func (r *replay) apply(r2 *http.Request) error {
	if r.length >= 0 {
		r2.ContentLength = r.length
		r2.GetBody = r.getBody
	}
	if !r.used {
		r.used = true
		r2.Body = r.orig
		return nil
	}
	b, err := r.getBody()
	if err != nil {
		return err
	}
	r2.Body = b
	return nil
}

// close closes the caller's body if no attempt took it over.
func (r *replay) close() {
	if !r.used && r.orig != nil {
		r.used = true
		_ = r.orig.Close()
	}
}

// discard drains a bounded part of resp's body and closes it.
func discard(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrainBytes)
	_ = resp.Body.Close()
}
