package main

import (
	"log/slog"
	"net/http"
	"testing"
	"time"
)

// TestServerTimeouts: the example's HTTP servers bound header, read, write
// and idle times (issue #11 item 6).
func TestServerTimeouts(t *testing.T) {
	hs := newHTTPServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	if hs.ReadHeaderTimeout != readHeaderTimeout || hs.ReadTimeout != readTimeout ||
		hs.WriteTimeout != writeTimeout || hs.IdleTimeout != idleTimeout {
		t.Errorf("timeouts: header %v read %v write %v idle %v", hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout, hs.IdleTimeout)
	}
	for _, d := range []time.Duration{hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout, hs.IdleTimeout} {
		if d == 0 {
			t.Errorf("a timeout is unset")
		}
	}
}
