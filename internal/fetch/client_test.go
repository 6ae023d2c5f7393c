package fetch

import (
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"code.dny.dev/ssrf"
)

func TestGuard(t *testing.T) {
	tests := []struct {
		name     string
		network  string
		address  string
		cfg      ClientConfig
		wantErr  error // nil => allowed
		wantSSRF error // the ssrf cause, when refused
	}{
		{name: "public v4 on 443", network: "tcp4", address: "8.8.8.8:443"},
		{name: "public v4 on 22", network: "tcp4", address: "8.8.8.8:22", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedPort},
		{name: "public v4 on 80 not default", network: "tcp4", address: "8.8.8.8:80", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedPort},
		{name: "public v4 on allowed 8443", network: "tcp4", address: "8.8.8.8:8443", cfg: ClientConfig{AllowedPorts: []uint16{443, 8443}}},
		{name: "public v6 on 443", network: "tcp6", address: "[2001:4860:4860::8888]:443"},
		{name: "udp refused", network: "udp4", address: "8.8.8.8:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedNetwork},
		{name: "10/8", network: "tcp4", address: "10.0.0.1:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "172.16/12", network: "tcp4", address: "172.16.0.1:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "192.168/16", network: "tcp4", address: "192.168.1.1:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "cloud metadata", network: "tcp4", address: "169.254.169.254:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "cgnat", network: "tcp4", address: "100.64.0.1:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "multicast", network: "tcp4", address: "224.0.0.1:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "documentation", network: "tcp4", address: "192.0.2.1:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "this network", network: "tcp4", address: "0.0.0.0:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "broadcast", network: "tcp4", address: "255.255.255.255:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "v4 loopback", network: "tcp4", address: "127.0.0.1:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "v6 loopback", network: "tcp6", address: "[::1]:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "v6 link-local", network: "tcp6", address: "[fe80::1]:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "v6 ula", network: "tcp6", address: "[fc00::1]:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "v4-mapped loopback", network: "tcp6", address: "[::ffff:127.0.0.1]:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "v4-mapped public", network: "tcp6", address: "[::ffff:8.8.8.8]:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "nat64 private", network: "tcp6", address: "[64:ff9b::a00:1]:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "6to4", network: "tcp6", address: "[2002:a00:1::]:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "v6 documentation", network: "tcp6", address: "[2001:db8::1]:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "unparsable", network: "tcp4", address: "example.com:443", wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrInvalidHostPort},

		{name: "loopback option: v4 loopback any port", network: "tcp4", address: "127.0.0.1:8080", cfg: ClientConfig{InsecureAllowLoopback: true}},
		{name: "loopback option: 127/8", network: "tcp4", address: "127.9.9.9:1", cfg: ClientConfig{InsecureAllowLoopback: true}},
		{name: "loopback option: v6 loopback", network: "tcp6", address: "[::1]:8080", cfg: ClientConfig{InsecureAllowLoopback: true}},
		{name: "loopback option: v4-mapped loopback still refused", network: "tcp6", address: "[::ffff:127.0.0.1]:8080", cfg: ClientConfig{InsecureAllowLoopback: true}, wantErr: ErrForbiddenAddress},
		{name: "loopback option: private still refused", network: "tcp4", address: "10.0.0.1:443", cfg: ClientConfig{InsecureAllowLoopback: true}, wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "loopback option: metadata still refused", network: "tcp4", address: "169.254.169.254:80", cfg: ClientConfig{InsecureAllowLoopback: true}, wantErr: ErrForbiddenAddress},
		{name: "allow prefix: private any port", network: "tcp4", address: "10.1.2.3:8080", cfg: ClientConfig{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}},
		{name: "allow prefix: v4-mapped form of an allowed v4", network: "tcp6", address: "[::ffff:10.1.2.3]:8080", cfg: ClientConfig{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}},
		{name: "allow prefix: another private range still refused", network: "tcp4", address: "192.168.1.1:443", cfg: ClientConfig{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedIP},
		{name: "allow prefix: public port rule kept", network: "tcp4", address: "8.8.8.8:22", cfg: ClientConfig{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedPort},
		{name: "allow prefix: udp refused", network: "udp4", address: "10.1.2.3:53", cfg: ClientConfig{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, wantErr: ErrForbiddenAddress},
		{name: "allow prefix: link-local range keeps metadata refused", network: "tcp4", address: "169.254.169.254:80", cfg: ClientConfig{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}}, wantErr: ErrForbiddenAddress},
		{name: "allow prefix: link-local range, another address", network: "tcp4", address: "169.254.1.1:80", cfg: ClientConfig{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}}},
		{name: "allow prefix: ULA keeps AWS v6 metadata refused", network: "tcp6", address: "[fd00:ec2::254]:80", cfg: ClientConfig{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("fc00::/7")}}, wantErr: ErrForbiddenAddress},
		{name: "allow prefix: exactly the metadata address", network: "tcp4", address: "169.254.169.254:80", cfg: ClientConfig{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("169.254.169.254/32")}}},
		{name: "loopback option: public port rule kept", network: "tcp4", address: "8.8.8.8:22", cfg: ClientConfig{InsecureAllowLoopback: true}, wantErr: ErrForbiddenAddress, wantSSRF: ssrf.ErrProhibitedPort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.GuardAddresses = true
			err := guard(cfg.withDefaults())(tt.network, tt.address, nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("guard(%s, %s) = %v, want %v", tt.network, tt.address, err, tt.wantErr)
			}
			if tt.wantSSRF != nil && !errors.Is(err, tt.wantSSRF) {
				t.Errorf("guard(%s, %s) = %v, want cause %v", tt.network, tt.address, err, tt.wantSSRF)
			}
		})
	}
}

func jsonServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestSSRFGuardEndToEnd(t *testing.T) {
	srv, hits := jsonServer(t)
	u, _ := url.Parse(srv.URL)
	localhostURL := "http://localhost:" + u.Port() + "/"
	tests := []struct {
		name    string
		cfg     ClientConfig
		url     string
		wantErr error
	}{
		{name: "loopback ip refused", cfg: ClientConfig{GuardAddresses: true}, url: srv.URL, wantErr: ErrForbiddenAddress},
		{name: "localhost refused", cfg: ClientConfig{GuardAddresses: true}, url: localhostURL, wantErr: ErrForbiddenAddress},
		{name: "loopback allowed by option", cfg: ClientConfig{GuardAddresses: true, InsecureAllowLoopback: true}, url: srv.URL},
		{name: "localhost allowed by option", cfg: ClientConfig{GuardAddresses: true, InsecureAllowLoopback: true}, url: localhostURL},
		{name: "no guard", cfg: ClientConfig{}, url: srv.URL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			_, err := Get(t.Context(), NewClient(tt.cfg), tt.url, 100)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Get error = %v, want %v", err, tt.wantErr)
			}
			if err != nil && errors.Is(err, ErrTransport) {
				t.Errorf("forbidden address also classified as %v: %v", ErrTransport, err)
			}
			if got := hits.Load() - before; (err == nil) != (got == 1) {
				t.Errorf("server saw %d requests, err %v", got, err)
			}
		})
	}
}

func TestRedirects(t *testing.T) {
	other, otherHits := jsonServer(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch {
		case r.URL.Path == "/doc":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{}`)
		case r.URL.Path == "/same":
			http.Redirect(w, r, "/doc", http.StatusFound)
		case r.URL.Path == "/cross":
			http.Redirect(w, r, other.URL+"/doc", http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/chain/"):
			n := len(r.URL.Path) - len("/chain/")
			if n == 0 {
				http.Redirect(w, r, "/doc", http.StatusFound)
				return
			}
			http.Redirect(w, r, r.URL.Path[:len(r.URL.Path)-1], http.StatusFound)
		}
	}))
	defer srv.Close()
	tests := []struct {
		name       string
		policy     RedirectPolicy
		path       string
		wantErr    error
		wantStatus int
		wantHits   int64
	}{
		{name: "none: same origin refused", policy: NoRedirects, path: "/same", wantErr: ErrStatus, wantStatus: 302, wantHits: 1},
		{name: "none: direct", policy: NoRedirects, path: "/doc", wantHits: 1},
		{name: "same origin followed", policy: SameOrigin, path: "/same", wantHits: 2},
		{name: "cross origin refused", policy: SameOrigin, path: "/cross", wantErr: ErrStatus, wantStatus: 302, wantHits: 1},
		{name: "three redirects followed", policy: SameOrigin, path: "/chain/xx", wantHits: 4},
		{name: "fourth redirect refused", policy: SameOrigin, path: "/chain/xxx", wantErr: ErrStatus, wantStatus: 302, wantHits: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			before := otherHits.Load()
			_, err := Get(t.Context(), NewClient(ClientConfig{Redirects: tt.policy}), srv.URL+tt.path, 100)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Get error = %v, want %v", err, tt.wantErr)
			}
			var se *StatusError
			if errors.As(err, &se) && se.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", se.Code, tt.wantStatus)
			}
			if got := hits.Load(); got != tt.wantHits {
				t.Errorf("origin saw %d requests, want %d", got, tt.wantHits)
			}
			if got := otherHits.Load() - before; got != 0 {
				t.Errorf("other origin saw %d requests, want 0", got)
			}
		})
	}
}

func TestRedirectFunc(t *testing.T) {
	req := func(raw string) *http.Request {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Request{URL: u}
	}
	orig := req("https://a.example/x")
	tests := []struct {
		name    string
		policy  RedirectPolicy
		next    string
		via     int
		wantErr error
	}{
		{name: "none", policy: NoRedirects, next: "https://a.example/y", via: 1, wantErr: http.ErrUseLastResponse},
		{name: "same", policy: SameOrigin, next: "https://a.example/y", via: 1},
		{name: "same, third", policy: SameOrigin, next: "https://a.example/y", via: 3},
		{name: "same, fourth", policy: SameOrigin, next: "https://a.example/y", via: 4, wantErr: http.ErrUseLastResponse},
		{name: "other host", policy: SameOrigin, next: "https://b.example/y", via: 1, wantErr: http.ErrUseLastResponse},
		{name: "other port", policy: SameOrigin, next: "https://a.example:8443/y", via: 1, wantErr: http.ErrUseLastResponse},
		{name: "downgrade", policy: SameOrigin, next: "http://a.example/y", via: 1, wantErr: http.ErrUseLastResponse},
		{name: "unknown policy is none", policy: RedirectPolicy(42), next: "https://a.example/y", via: 1, wantErr: http.ErrUseLastResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			via := make([]*http.Request, tt.via)
			for i := range via {
				via[i] = orig
			}
			if err := redirectFunc(tt.policy)(req(tt.next), via); !errors.Is(err, tt.wantErr) {
				t.Errorf("redirect to %s = %v, want %v", tt.next, err, tt.wantErr)
			}
		})
	}
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())

	if _, err := Get(t.Context(), NewClient(ClientConfig{}), srv.URL, 10); !errors.Is(err, ErrTransport) {
		t.Errorf("Get with system roots = %v, want %v", err, ErrTransport)
	}
	if _, err := Get(t.Context(), NewClient(ClientConfig{RootCAs: pool}), srv.URL, 10); err != nil {
		t.Errorf("Get with test root = %v, want nil", err)
	}
	c := NewClient(ClientConfig{RootCAs: pool, GuardAddresses: true})
	if _, err := Get(t.Context(), c, srv.URL, 10); !errors.Is(err, ErrForbiddenAddress) {
		t.Errorf("Get guarded = %v, want %v", err, ErrForbiddenAddress)
	}
}

func TestNewClientNoProxy(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	srv, _ := jsonServer(t)
	if _, err := Get(t.Context(), NewClient(ClientConfig{}), srv.URL, 10); err != nil {
		t.Fatalf("Get = %v; the environment proxy must be ignored", err)
	}
}
