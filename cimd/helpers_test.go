package cimd

import (
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// t0 is the pinned test epoch.
var t0 = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// countingListener counts accepted connections, to prove that nothing was
// fetched that should not have been.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// tlsServer is an httptest TLS server on 127.0.0.1 with a connection
// counter, a request counter and the pool that trusts its certificate.
type tlsServer struct {
	*httptest.Server
	conns *countingListener
	hits  atomic.Int64
	pool  *x509.CertPool
}

func newTLSServer(t *testing.T, h http.Handler) *tlsServer {
	t.Helper()
	s := &tlsServer{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	s.conns = &countingListener{Listener: srv.Listener}
	srv.Listener = s.conns
	srv.StartTLS()
	t.Cleanup(srv.Close)
	s.Server = srv
	s.pool = x509.NewCertPool()
	s.pool.AddCert(srv.Certificate())
	return s
}

// port returns the server's port as a number.
func (s *tlsServer) port() uint16 {
	return uint16(s.Listener.Addr().(*net.TCPAddr).Port)
}

// response describes one canned answer. In body, {{URL}} becomes the URL
// the request was made to.
type response struct {
	status      int    // 0 means 200
	contentType string // "" means application/json; "-" means none at all
	header      map[string]string
	body        string
}

func (resp response) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, v := range resp.header {
		w.Header().Set(k, v)
	}
	switch resp.contentType {
	case "":
		w.Header().Set("Content-Type", "application/json")
	case "-":
		w.Header()["Content-Type"] = nil
	default:
		w.Header().Set("Content-Type", resp.contentType)
	}
	if resp.status != 0 {
		w.WriteHeader(resp.status)
	}
	_, _ = w.Write([]byte(strings.ReplaceAll(resp.body, "{{URL}}", "https://"+r.Host+r.URL.RequestURI())))
}

// validDoc is a minimal valid document; {{URL}} is its own URL.
const validDoc = `{"client_id":"{{URL}}","client_name":"Test Client","redirect_uris":["http://127.0.0.1:3000/callback"]}`

// testResolverConfig trusts s, allows loopback and disables rate limits.
func testResolverConfig(s *tlsServer, clk *clock) ResolverConfig {
	return ResolverConfig{
		InsecureAllowLoopback: true,
		RootCAs:               s.pool,
		GlobalFetchRate:       rate.Inf,
		HostFetchRate:         rate.Inf,
		Now:                   clk.Now,
	}
}

func mustResolver(t *testing.T, cfg ResolverConfig) *Resolver {
	t.Helper()
	r, err := NewResolver(cfg)
	if err != nil {
		t.Fatalf("NewResolver: %v", err)
	}
	return r
}

// wantErrs checks that err matches every sentinel in want (nil: no error).
func wantErrs(t *testing.T, err error, want ...error) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("got error %v, want nil", err)
		}
		return
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Fatalf("got error %v, want one matching %v", err, w)
		}
	}
}

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
