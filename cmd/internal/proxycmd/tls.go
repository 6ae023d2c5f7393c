package proxycmd

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certCheckInterval bounds how often a handshake looks at the certificate
// files: at most one read of the pair per interval, whatever the handshake
// rate.
const certCheckInterval = time.Second

// maxPEMBytes bounds each certificate or key file.
const maxPEMBytes = 1 << 20

// certFiles serves the certificate of a PEM certificate and key file pair,
// loading it again when either file's content changes (a rotation without
// restart). A pair that fails to load (a rotation half done, a mismatched
// key) keeps the previous certificate in use and is logged once per
// change.
type certFiles struct {
	certFile, keyFile string
	interval          time.Duration
	now               func() time.Time
	log               *slog.Logger

	mu         sync.Mutex
	cert       *tls.Certificate
	certPEM    []byte // of the pair last tried
	keyPEM     []byte
	checked    time.Time
	checkCount int // reads of the pair (tests)
}

// newCertFiles loads the pair once; an error is a start-up error.
func newCertFiles(certFile, keyFile string, log *slog.Logger) (*certFiles, error) {
	c := &certFiles{certFile: certFile, keyFile: keyFile, interval: certCheckInterval, now: time.Now, log: log}
	cp, kp, err := c.read()
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		return nil, fmt.Errorf("tls: %s, %s: %w", certFile, keyFile, err)
	}
	c.cert, c.certPEM, c.keyPEM, c.checked = &cert, cp, kp, c.now()
	return c, nil
}

// read reads both files, each bounded by maxPEMBytes.
func (c *certFiles) read() (certPEM, keyPEM []byte, err error) {
	var out [2][]byte
	for i, name := range []string{c.certFile, c.keyFile} {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, fmt.Errorf("tls: %w", err)
		}
		b, err := io.ReadAll(io.LimitReader(f, maxPEMBytes+1))
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("tls: %w", err)
		}
		if len(b) > maxPEMBytes {
			return nil, nil, fmt.Errorf("tls: %s: larger than %d bytes", name, maxPEMBytes)
		}
		out[i] = b
	}
	return out[0], out[1], nil
}

// getCertificate is tls.Config.GetCertificate.
func (c *certFiles) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); now.Sub(c.checked) >= c.interval {
		c.checked = now
		c.reloadLocked()
	}
	return c.cert, nil
}

// reloadLocked loads the pair again if it changed since last tried.
func (c *certFiles) reloadLocked() {
	c.checkCount++
	cp, kp, err := c.read()
	if err != nil || (bytes.Equal(cp, c.certPEM) && bytes.Equal(kp, c.keyPEM)) {
		return // unchanged, or a file being replaced: look again at the next check
	}
	c.certPEM, c.keyPEM = cp, kp
	cert, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		c.log.Warn("tls: certificate files changed but do not load; keeping the previous certificate", "cert_file", c.certFile, "error", err.Error())
		return
	}
	c.cert = &cert
	c.log.Info("tls: certificate reloaded", "cert_file", c.certFile)
}

// tlsConfig is the listener's TLS configuration: Go's defaults from TLS
// 1.2 on, HTTP/2 and HTTP/1.1, the certificate from c.
func (c *certFiles) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: c.getCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
	}
}
