package client

import (
	"context"
	"crypto"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/validate/dpop"
)

// nonceServer checks DPoP proofs with server nonces, the way a resource
// server (401 use_dpop_nonce) or a token endpoint (400 use_dpop_nonce)
// asks for them (RFC 9449 §8, §9).
func nonceServer(t *testing.T, jkt, token string, tokenEndpoint bool) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	v, err := dpop.New(dpop.Config{NonceSecret: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		req := dpop.Request{Method: r.Method, URI: srv.URL + r.URL.Path, Proofs: r.Header.Values("DPoP")}
		if !tokenEndpoint {
			req.AccessToken, req.JKT = token, jkt
			if r.Header.Get("Authorization") != "DPoP "+token {
				t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
			}
		}
		_, err := v.Verify(r.Context(), req)
		switch {
		case errors.Is(err, dpop.Error{Reason: "use_nonce"}) && tokenEndpoint:
			w.Header().Set("DPoP-Nonce", v.Nonce(v2now()))
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":"use_dpop_nonce"}`))
		case errors.Is(err, dpop.Error{Reason: "use_nonce"}):
			w.Header().Set("DPoP-Nonce", v.Nonce(v2now()))
			w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce", algs="ES256"`)
			w.WriteHeader(401)
		case err != nil:
			t.Errorf("proof refused: %v", err)
			w.WriteHeader(401)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestDPoPNonceRetry(t *testing.T) {
	key, err := NewDPoPKey(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, n := nonceServer(t, key.Thumbprint(), "tok", false)
	tr, err := New(Config{Resource: srv.URL + "/mcp", DPoP: key,
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "tok", TokenType: "DPoP"})})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: tr}
	for i, want := range []int32{2, 3} { // one retry to learn the nonce, then none
		resp, err := hc.Post(srv.URL+"/mcp?x=1", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || n.Load() != want {
			t.Fatalf("request %d: status %d after %d sends, want 200 after %d", i, resp.StatusCode, n.Load(), want)
		}
	}
}

func TestDPoPTokenTransportNonce(t *testing.T) {
	key, _ := NewDPoPKey(nil, nil)
	srv, n := nonceServer(t, "", "", true)
	hc := &http.Client{Transport: key.TokenTransport(nil)}
	resp, err := hc.Post(srv.URL+"/token", "application/x-www-form-urlencoded", strings.NewReader("grant_type=x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || n.Load() != 2 {
		t.Fatalf("status %d after %d sends, want 200 after 2", resp.StatusCode, n.Load())
	}
}

func TestNewDPoPKey(t *testing.T) {
	if _, err := NewDPoPKey(badSigner{}, nil); !errors.Is(err, errDPoP) {
		t.Errorf("unsupported key: err = %v, want errDPoP", err)
	}
	k, err := NewDPoPKey(nil, nil)
	if err != nil || len(k.Thumbprint()) != 43 {
		t.Fatalf("generated key: %v %q", err, k.Thumbprint())
	}
	if _, err := k.Proof("POST", "/relative", ""); !errors.Is(err, errDPoP) {
		t.Errorf("relative target: err = %v", err)
	}
	_ = context.Background()
}

type badSigner struct{}

func (badSigner) Public() crypto.PublicKey { return nil }
func (badSigner) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return nil, errors.New("no")
}

func v2now() time.Time { return time.Now() }
