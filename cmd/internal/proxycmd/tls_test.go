package proxycmd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA is a certificate authority the test makes.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcpguard test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue writes a leaf certificate for 127.0.0.1 with serial to certFile and
// its key to keyFile.
func (ca *testCA) issue(t *testing.T, serial int64, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTLS: with -tls-cert and -tls-key the proxy serves HTTPS only (TLS
// 1.2 and later), and its metadata and challenges name https URLs; a
// certificate rotated in the files is served without a restart.
func TestTLS(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	ca.issue(t, 100, certFile, keyFile)
	upstream, _ := plainUpstream(t)
	addr, devAddr := freeAddr(t), freeAddr(t)
	o, err := parseFlags([]string{"-addr", addr, "-upstream", upstream, "-dev-as", devAddr, "-tls-cert", certFile, "-tls-key", keyFile}, &syncBuf{})
	if err != nil {
		t.Fatal(err)
	}
	st, stderr := startRun(t, o, nil)
	if want := "https://" + addr + "/mcp"; st.Resource != want {
		t.Fatalf("resource %q, want %q", st.Resource, want)
	}
	if !strings.Contains(stderr.String(), "health: https://"+addr+"/healthz") {
		t.Errorf("banner lacks the https health URL:\n%s", stderr.String())
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	get := func(url string) (*http.Response, string) {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, body := get("https://" + addr + "/.well-known/oauth-protected-resource/mcp")
	if resp.StatusCode != 200 || !strings.Contains(body, `"resource":"https://`+addr+`/mcp"`) {
		t.Errorf("metadata: %d %s", resp.StatusCode, body)
	}
	if got := resp.TLS.PeerCertificates[0].SerialNumber.Int64(); got != 100 {
		t.Errorf("serial %d, want 100", got)
	}
	resp, _ = get("https://" + addr + "/mcp")
	if wa := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(wa, `resource_metadata="https://`+addr+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("challenge: %d %q, want 401 naming the https metadata URL", resp.StatusCode, wa)
	}
	// Plain HTTP and TLS 1.1 are refused.
	if r, err := http.Get("http://" + addr + "/healthz"); err == nil {
		if r.StatusCode == 200 {
			t.Error("plain HTTP served")
		}
		r.Body.Close()
	}
	old := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool, MaxVersion: tls.VersionTLS11}}
	if _, err := (&http.Client{Transport: old}).Get("https://" + addr + "/healthz"); err == nil {
		t.Error("TLS 1.1 accepted")
	}
}

// TestCertRotation: the certificate files are read again at most once per
// interval; a changed pair is served from the next handshake after it, a
// pair that does not load keeps the previous certificate.
func TestCertRotation(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	ca.issue(t, 1, certFile, keyFile)
	c, err := newCertFiles(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	c.checked = now
	serial := func() int64 {
		t.Helper()
		cert, err := c.getCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := x509.ParseCertificate(cert.Certificate[0])
		return x.SerialNumber.Int64()
	}
	ca.issue(t, 2, certFile, keyFile)
	if got := serial(); got != 1 || c.checkCount != 0 {
		t.Errorf("within the interval: serial %d, %d reads; want 1 and no read", got, c.checkCount)
	}
	now = now.Add(certCheckInterval)
	if got := serial(); got != 2 {
		t.Errorf("after the interval: serial %d, want 2", got)
	}
	// A key that does not match its certificate: the previous pair stays.
	other := filepath.Join(dir, "other.pem")
	ca.issue(t, 3, certFile, other)
	now = now.Add(certCheckInterval)
	if got := serial(); got != 2 {
		t.Errorf("mismatched pair: serial %d, want 2 kept", got)
	}
	for range 100 {
		serial()
	}
	if c.checkCount != 2 {
		t.Errorf("%d reads of the files, want 2 (one per interval)", c.checkCount)
	}
}
