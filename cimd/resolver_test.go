package cimd

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

func TestResolveSpecExampleOverTLS(t *testing.T) {
	body := strings.Replace(readTestdata(t, "spec-5.6.json"), specURL, "{{URL}}", 1)
	s := newTLSServer(t, response{body: body})
	r := mustResolver(t, testResolverConfig(s, newClock()))
	id := s.URL + "/oauth/client-metadata.json"
	d, err := r.Resolve(context.Background(), id)
	wantErrs(t, err)
	if d.ClientID != id || d.ClientName != "Example MCP Client" || len(d.RedirectURIs) != 2 {
		t.Errorf("got %+v", d)
	}
	c := &Client{Document: *d}
	if !c.RedirectURIAllowed("http://127.0.0.1:49152/callback") || c.RedirectURIAllowed("http://localhost:49152/callback") {
		t.Errorf("loopback port relaxation wrong for the spec example")
	}
}

func TestResolveURLShapeNeverFetches(t *testing.T) {
	s := newTLSServer(t, response{body: validDoc})
	r := mustResolver(t, testResolverConfig(s, newClock()))
	host := strings.TrimPrefix(s.URL, "https://")
	for _, u := range []string{
		"", "http://" + host + "/c.json", "HTTPS://" + host + "/c.json", "https://" + host,
		"https://" + host + "/", "https://" + host + "/c.json#x", "https://" + host + "/c.json#",
		"https://u:p@" + host + "/c.json", "https://" + host + "/a/../c.json",
		"https://" + host + "/a/%2e%2e/c.json", "https://" + host + "/%2E/c.json",
		"https://" + host + "/c.json?x=1", "https://" + host + "/a%2fc.json",
		"https://" + host + "/c .json", "https://" + host + "/c.json\n",
	} {
		t.Run(u, func(t *testing.T) {
			_, err := r.Resolve(context.Background(), u)
			wantErrs(t, err, errNotClientIDURL)
		})
	}
	if n := s.conns.n.Load(); n != 0 {
		t.Errorf("%d connections for malformed client_ids, want 0", n)
	}
}

func TestResolveAllowQuery(t *testing.T) {
	s := newTLSServer(t, response{body: validDoc})
	cfg := testResolverConfig(s, newClock())
	cfg.AllowQuery = true
	r := mustResolver(t, cfg)
	_, err := r.Resolve(context.Background(), s.URL+"/c.json?tenant=a")
	wantErrs(t, err)
}

// TestResolveForbiddenLiteralAddresses runs the real guard on literal
// special-purpose IPs. The guard refuses them before connect(2), so no
// packet is sent and no DNS is needed: fetch.ErrForbiddenAddress comes
// from the dialer's Control, which runs before the connect; a request
// that had connected or waited on a dial would end with another error (a
// refusal, a timeout), so the error tells, with no bound on the elapsed
// real time, which a loaded machine stretches.
func TestResolveForbiddenLiteralAddresses(t *testing.T) {
	r := mustResolver(t, ResolverConfig{})
	for _, host := range []string{
		"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"100.64.0.1", "0.0.0.0", "224.0.0.1", "239.255.255.250", "255.255.255.255", "240.0.0.1",
		"192.0.2.1", "198.51.100.1", "203.0.113.1", "198.18.0.1", "192.0.0.1",
		"[::1]", "[::]", "[fe80::1]", "[fc00::1]", "[fd00:ec2::254]", "[ff02::1]",
		"[::ffff:127.0.0.1]", "[::ffff:10.0.0.1]", "[::ffff:169.254.169.254]",
		"[64:ff9b::a00:1]", "[64:ff9b::7f00:1]", "[2002:a00:1::1]", "[2002:7f00:1::1]",
		"[2001:db8::1]", "[2001::1]", "[100::1]",
	} {
		t.Run(host, func(t *testing.T) {
			_, err := r.Resolve(context.Background(), "https://"+host+"/client.json")
			wantErrs(t, err, errForbiddenAddress, fetch.ErrForbiddenAddress)
		})
	}
	// A public address on a port that is not allowed.
	_, err := r.Resolve(context.Background(), "https://8.8.8.8:8443/client.json")
	wantErrs(t, err, errForbiddenAddress)
}

// TestResolveForbiddenBehindHostname: a real server on 127.0.0.1, reached
// by the name "localhost" and by its IP, with its port allowed but
// without InsecureAllowLoopback. The guard checks the resolved IP, so the
// server never sees a connection.
func TestResolveForbiddenBehindHostname(t *testing.T) {
	s := newTLSServer(t, response{body: validDoc})
	r := mustResolver(t, ResolverConfig{RootCAs: s.pool, AllowedPorts: []uint16{s.port()}})
	port := strconv.Itoa(int(s.port()))
	for _, u := range []string{
		"https://localhost:" + port + "/client.json",
		"https://127.0.0.1:" + port + "/client.json",
		"https://[::ffff:127.0.0.1]:" + port + "/client.json",
	} {
		_, err := r.Resolve(context.Background(), u)
		wantErrs(t, err, errForbiddenAddress)
	}
	if n := s.conns.n.Load(); n != 0 {
		t.Errorf("%d connections reached the loopback server, want 0", n)
	}
}

func TestResolveRefusesRedirects(t *testing.T) {
	target := newTLSServer(t, response{body: validDoc})
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			s := newTLSServer(t, response{status: code, header: map[string]string{"Location": target.URL + "/client.json"}, contentType: "text/html"})
			cfg := testResolverConfig(s, newClock())
			cfg.RootCAs.AddCert(target.Certificate())
			r := mustResolver(t, cfg)
			_, err := r.Resolve(context.Background(), s.URL+"/client.json")
			wantErrs(t, err, errStatus)
			if s.hits.Load() != 1 {
				t.Errorf("origin hits = %d, want 1", s.hits.Load())
			}
		})
	}
	if n := target.conns.n.Load(); n != 0 {
		t.Errorf("redirect target got %d connections, want 0", n)
	}
}

func TestResolveStatusAndContentType(t *testing.T) {
	tests := []struct {
		name string
		resp response
		want error
	}{
		{"404", response{status: 404, body: validDoc}, errStatus},
		{"500", response{status: 500, body: validDoc}, errStatus},
		{"201", response{status: 201, body: validDoc}, errStatus},
		{"204", response{status: 204}, errStatus},
		{"203", response{status: 203, body: validDoc}, errStatus},
		{"304", response{status: 304}, errStatus},
		{"429", response{status: 429, header: map[string]string{"Retry-After": "1"}}, errStatus},
		{"text/html", response{contentType: "text/html", body: validDoc}, errContentType},
		{"text/plain", response{contentType: "text/plain", body: validDoc}, errContentType},
		{"none", response{contentType: "-", body: validDoc}, errContentType},
		{"javascript", response{contentType: "application/javascript", body: validDoc}, errContentType},
		{"malformed", response{contentType: "application/json;;;", body: validDoc}, errContentType},
		{"json-ish", response{contentType: "application/jsonx", body: validDoc}, errContentType},
		{"octet-stream", response{contentType: "application/octet-stream", body: validDoc}, errContentType},
	}
	mux := http.NewServeMux()
	for _, tt := range tests {
		mux.Handle("/"+tt.name, tt.resp)
	}
	s := newTLSServer(t, mux)
	r := mustResolver(t, testResolverConfig(s, newClock()))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Resolve(context.Background(), s.URL+"/"+tt.name)
			wantErrs(t, err, tt.want)
		})
	}
}

func TestResolveClientIDMismatch(t *testing.T) {
	var body atomic.Value
	s := newTLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		response{body: body.Load().(string)}.ServeHTTP(w, r)
	}))
	base := s.URL
	host := strings.TrimPrefix(base, "https://")
	tests := []struct{ name, docID string }{
		{"path case", base + "/Client.json"},
		{"host case", "https://LOCALHOST" + host[len("127.0.0.1"):] + "/client.json"},
		{"scheme case", "HTTPS://" + host + "/client.json"},
		{"trailing slash", base + "/client.json/"},
		{"missing path", base},
		{"other port", "https://127.0.0.1:1/client.json"},
		{"default port added", "https://127.0.0.1:443/client.json"},
		{"percent-encoded", base + "/%63lient.json"},
		{"query added", base + "/client.json?x=1"},
		{"fragment added", base + "/client.json#x"},
		{"trailing space", base + "/client.json "},
		{"other host", "https://app.example.com/client.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body.Store(`{"client_id":"` + tt.docID + `","client_name":"x","redirect_uris":["https://a.example/cb"]}`)
			r := mustResolver(t, testResolverConfig(s, newClock()))
			_, err := r.Resolve(context.Background(), base+"/client.json")
			wantErrs(t, err, errClientIDMismatch)
		})
	}
}

func TestResolveFailuresAreNotCached(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	s := newTLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			response{status: 503}.ServeHTTP(w, r)
			return
		}
		response{body: validDoc}.ServeHTTP(w, r)
	}))
	r := mustResolver(t, testResolverConfig(s, newClock()))
	id := s.URL + "/client.json"
	_, err := r.Resolve(context.Background(), id)
	wantErrs(t, err, errStatus)
	fail.Store(false)
	_, err = r.Resolve(context.Background(), id)
	wantErrs(t, err)
	if got := s.hits.Load(); got != 2 {
		t.Errorf("hits = %d, want 2 (errors must not be cached)", got)
	}
}

func TestResolveCustomHTTPClientBypassesGuard(t *testing.T) {
	s := newTLSServer(t, response{body: validDoc})
	// srv.Client() trusts the test CA and has no SSRF guard: as documented,
	// a custom client is used as given.
	r := mustResolver(t, ResolverConfig{HTTPClient: s.Client()})
	_, err := r.Resolve(context.Background(), s.URL+"/client.json")
	wantErrs(t, err)
}

func TestResolveCallerCancel(t *testing.T) {
	release := make(chan struct{})
	s := newTLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		response{body: validDoc}.ServeHTTP(w, r)
	}))
	r := mustResolver(t, testResolverConfig(s, newClock()))
	id := s.URL + "/client.json"

	patient := make(chan error, 1)
	go func() {
		_, err := r.Resolve(context.Background(), id)
		patient <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := r.Resolve(ctx, id)
	wantErrs(t, err, errFetch, context.DeadlineExceeded)
	close(release)
	wantErrs(t, <-patient) // the shared fetch was not cancelled with ctx
}

func TestNewResolverConfigErrors(t *testing.T) {
	for _, cfg := range []ResolverConfig{
		{Timeout: -1}, {MaxBytes: -1}, {CacheSize: -1}, {MaxConcurrentFetches: -1},
		{HostFetchRate: -1}, {GlobalFetchBurst: -1}, {MaxHosts: -1},
		{MinCacheTTL: time.Hour, MaxCacheTTL: time.Minute},
	} {
		if _, err := NewResolver(cfg); !errors.Is(err, errConfig) {
			t.Errorf("NewResolver(%+v) error = %v, want errConfig", cfg, err)
		}
	}
}
