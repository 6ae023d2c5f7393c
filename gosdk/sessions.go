package gosdk

import (
	"net/http"
)

// DefaultMaxSessions is the number of session owners remembered when
// Config.MaxSessions is zero.
const DefaultMaxSessions = 10000

const sessionHeader = "Mcp-Session-Id"

// The adapter remembers which principal (its ID) each go-sdk session was
// created by (an internal/sessionowner.Owners), learnt from the
// Mcp-Session-Id header of the go-sdk's answer to a request without one. It
// only turns the go-sdk's own refusal of a session of another user (403, no
// challenge, and proof that the session exists) into the answer for an
// unknown session (404), which makes a client start a new session and
// reveals nothing: a session it does not know (never seen, or forgotten
// past the bound) is left to the go-sdk's check.

// headerHook is an http.ResponseWriter that calls onHeader once, with the
// status, just before the header is written. Unwrap keeps
// http.ResponseController (flushing SSE streams) working.
type headerHook struct {
	http.ResponseWriter
	onHeader func(status int, h http.Header)
	done     bool
}

func (w *headerHook) WriteHeader(status int) {
	if !w.done {
		w.done = true
		w.onHeader(status, w.Header())
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *headerHook) Write(b []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *headerHook) Flush() {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *headerHook) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// bindSession answers 404 for a known session of another principal and
// returns false; otherwise it returns the writer next should use, which
// records the owner of a session the go-sdk creates or forgets one it
// deletes.
func (a *Adapter) bindSession(w http.ResponseWriter, r *http.Request, id string) (http.ResponseWriter, bool) {
	sid := r.Header.Get(sessionHeader) // the go-sdk reads the first value too
	if sid == "" {
		if r.Method != http.MethodPost {
			return w, true
		}
		return &headerHook{ResponseWriter: w, onHeader: func(_ int, h http.Header) {
			if s := h.Get(sessionHeader); s != "" {
				a.owners.Add(s, id)
			}
		}}, true
	}
	if o, known := a.owners.Get(sid); known && o != id {
		http.Error(w, "session not found", http.StatusNotFound)
		return nil, false
	}
	if r.Method != http.MethodDelete {
		return w, true
	}
	return &headerHook{ResponseWriter: w, onHeader: func(status int, _ http.Header) {
		if status == http.StatusNoContent {
			a.owners.Remove(sid)
		}
	}}, true
}
