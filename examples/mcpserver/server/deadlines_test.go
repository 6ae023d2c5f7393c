package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestLiftDeadlines: behind a server with short read and write timeouts, a
// handler wrapped by liftDeadlines may take longer than both: its context
// is not cancelled and its answer arrives. Without it the connection is
// cut (the control case).
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
	for _, tc := range []struct {
		name string
		h    http.Handler
		ok   bool
	}{{"lifted", liftDeadlines(slow), true}, {"server timeouts", slow, false}} {
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
