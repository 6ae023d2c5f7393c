package audit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

func TestEndpointPrefixes(t *testing.T) {
	tests := []struct {
		addr string
		want []string
	}{
		{"127.0.0.1", []string{"127.0.0.0/8"}},
		{"::1", []string{"::1/128"}},
		{"10.1.2.3", []string{"10.0.0.0/8"}},
		{"192.168.7.7", []string{"192.168.0.0/16"}},
		{"fd12::1", []string{"fc00::/7"}},
		{"169.254.1.1", []string{"169.254.1.1/32"}}, // link-local: the address only
		{"::ffff:10.1.2.3", []string{"10.0.0.0/8"}},
		{"8.8.8.8", nil}, // public: nothing more
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			var got []string
			for _, p := range endpointPrefixes([]netip.Addr{netip.MustParseAddr(tt.addr)}) {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("endpointPrefixes(%s) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
}

// TestHandedURLRouting: every URL off the origins the operator named goes
// through the guarded client: for an endpoint on loopback, another
// loopback port is reached, while private, link-local and cloud metadata
// addresses are refused before any connection (a JWKS URL, a token
// endpoint, anything).
func TestHandedURLRouting(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer other.Close()
	// A refusal is fetch.ErrForbiddenAddress, raised by the dialer's
	// Control before any connect: a request that waited on a dial to an
	// unroutable address would end with the Timeout's error instead (or a
	// network error), so the error tells, with no bound on the elapsed
	// real time, which a loaded machine stretches.
	const timeout = 30 * time.Second
	a, err := New(Config{Endpoint: "http://127.0.0.1:1/mcp", Interval: -1, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	a.guarded = newGuardedClient(a.endpoint, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, a.cfg)
	tests := []struct {
		url     string
		refused bool
	}{
		{other.URL + "/jwks", false},
		{"http://169.254.169.254/latest/meta-data/", true},
		{"http://169.254.170.2/v2/credentials", true},
		{"http://10.255.255.1/jwks", true},
		{"http://192.168.0.1/token", true},
		{"http://[fd00:ec2::254]/", true},
		{"http://[fe80::1]/", true},
		{"http://100.100.100.200/", true},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			x := a.do(context.Background(), req)
			if got := errors.Is(x.err, fetch.ErrForbiddenAddress); got != tt.refused {
				t.Errorf("refused = %v (err %v), want %v", got, x.err, tt.refused)
			}
			if tt.refused && errors.Is(x.err, context.DeadlineExceeded) {
				t.Errorf("the refusal %v: it waited on a dial", x.err)
			}
		})
	}
}

// TestEndpointPrefixesMixedAnswer: a name the attacker's DNS answers with a
// public address and a loopback (or private) one. The audit's requests to
// the endpoint fall back from the refused loopback dial to the public
// server, which then hands out loopback URLs: a public address among the
// endpoint's opens nothing.
func TestEndpointPrefixesMixedAnswer(t *testing.T) {
	tests := []struct {
		addrs []string
		want  []string
	}{
		{[]string{"8.8.8.8", "127.0.0.1"}, nil},
		{[]string{"127.0.0.1", "8.8.8.8"}, nil},
		{[]string{"10.1.2.3", "2001:4860:4860::8888"}, nil},
		{[]string{"1.1.1.1", "169.254.1.1"}, nil},
		{[]string{"127.0.0.1", "::1"}, []string{"127.0.0.0/8", "::1/128"}},
		{[]string{"10.1.2.3", "192.168.1.1"}, []string{"10.0.0.0/8", "192.168.0.0/16"}},
	}
	for _, tt := range tests {
		var addrs []netip.Addr
		for _, s := range tt.addrs {
			addrs = append(addrs, netip.MustParseAddr(s))
		}
		var got []string
		for _, p := range endpointPrefixes(addrs) {
			got = append(got, p.String())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("endpointPrefixes(%v) = %v, want %v", tt.addrs, got, tt.want)
		}
	}
}

// TestEndpointDialPinned: the endpoint's name is resolved once, when the
// run starts, and every request to it dials those addresses, so that the
// addresses that decided what handed URLs may reach are the ones the
// audit talks to. Here the name resolves (through the run's lookup) to
// the loopback test server, and nowhere through the system resolver:
// the run reaches it, and the lookup ran once.
func TestEndpointDialPinned(t *testing.T) {
	var mu sync.Mutex
	var hosts []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Bearer realm="pinned"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer s.Close()
	port := netip.MustParseAddrPort(s.Listener.Addr().String()).Port()
	endpoint := fmt.Sprintf("http://rebind.invalid:%d/mcp", port)
	a, err := New(Config{Endpoint: endpoint, Interval: -1, Timeout: 2 * time.Second, MaxRequests: 3})
	if err != nil {
		t.Fatal(err)
	}
	lookups := 0
	a.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		lookups++
		if host != "rebind.invalid" {
			return nil, errors.New("unexpected host " + host)
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := a.Run(ctx); errors.Is(err, ErrUnreachable) {
		t.Fatalf("Run: %v: the requests did not go to the pinned address", err)
	}
	if lookups != 1 {
		t.Errorf("%d lookups, want 1", lookups)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hosts) == 0 || hosts[0] != fmt.Sprintf("rebind.invalid:%d", port) {
		t.Errorf("Host headers %q, want the endpoint's name", hosts)
	}
}
