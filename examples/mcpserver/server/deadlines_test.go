package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/middleware"
)

// TestLiftDeadlines: behind a server with short read and write timeouts, a
// handler wrapped by liftDeadlines may take longer than both when the
// request has an authenticated principal: its context is not cancelled and
// its answer arrives. Without it, or for anonymous callers, the connection
// is cut.
func TestLiftDeadlines(t *testing.T) {
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(500 * time.Millisecond):
		case <-r.Context().Done():
			http.Error(w, "cancelled", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "done")
	})
	as := func(p *middleware.Principal, h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r.WithContext(middleware.ContextWithPrincipal(r.Context(), p)))
		})
	}
	for _, tc := range []struct {
		name string
		h    http.Handler
		ok   bool
	}{
		{"lifted", as(&middleware.Principal{Subject: "u"}, liftDeadlines(slow)), true},
		{"server timeouts", slow, false},
		{"anonymous keeps timeouts", as(&middleware.Principal{Anonymous: true}, liftDeadlines(slow)), false},
		{"no principal keeps timeouts", liftDeadlines(slow), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewUnstartedServer(tc.h)
			ts.Config.ReadTimeout = 200 * time.Millisecond
			ts.Config.WriteTimeout = 200 * time.Millisecond
			ts.Start()
			defer ts.Close()
			resp, err := ts.Client().Get(ts.URL)
			var body []byte
			if err == nil {
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			got := err == nil && resp.StatusCode == http.StatusOK && string(body) == "done"
			if got != tc.ok {
				t.Errorf("answered %t (err %v, body %q), want %t", got, err, body, tc.ok)
			}
		})
	}
}
