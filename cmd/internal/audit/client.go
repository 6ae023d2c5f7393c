package audit

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

// exchange is one request the audit sent and what came back.
type exchange struct {
	method    string
	url       *url.URL
	reqHeader http.Header
	status    int
	header    http.Header
	body      []byte
	truncated bool
	elapsed   time.Duration
	err       error
}

// ok reports whether a response arrived.
func (x *exchange) ok() bool { return x.err == nil }

// is2xx reports a successful status.
func (x *exchange) is2xx() bool { return x.err == nil && x.status >= 200 && x.status < 300 }

// newTransport is the default transport: no proxies, TLS 1.2 or later,
// bounded handshakes and headers, the endpoint's host dialled by d at
// its pinned addresses.
func newTransport(timeout time.Duration, roots *x509.CertPool, d *pinnedDialer) *http.Transport {
	d.d.Timeout = 5 * time.Second
	return &http.Transport{
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSHandshakeTimeout:    5 * time.Second,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
}

// newClient returns the client of the origins the operator named:
// per-request timeout, and redirects as sameOriginGET.
func newClient(rt http.RoundTripper, timeout time.Duration) *http.Client {
	return &http.Client{Transport: rt, Timeout: timeout, CheckRedirect: sameOriginGET}
}

// sameOriginGET follows redirects only for GET and HEAD, at most 3, and
// only within the origin of the first request.
func sameOriginGET(req *http.Request, via []*http.Request) error {
	first := via[0]
	if len(via) > 3 || (first.Method != http.MethodGet && first.Method != http.MethodHead) {
		return http.ErrUseLastResponse
	}
	if origin(req.URL) != origin(first.URL) {
		return http.ErrUseLastResponse
	}
	return nil
}

// do sends req, paced and counted, and reads at most MaxBody of the
// answer. A URL on an origin the operator named goes through the plain
// client, every other one through the guarded client. It never returns
// nil.
func (a *Auditor) do(ctx context.Context, req *http.Request) *exchange {
	x := &exchange{method: req.Method, url: req.URL, reqHeader: req.Header.Clone()}
	if req.Host != "" && req.Host != req.URL.Host {
		x.reqHeader.Set("Host", req.Host)
	}
	host := hostKey(req.URL)
	capped := !a.trusted(req.URL) // the operator's own origins are bounded by MaxRequests only
	switch {
	case a.runOver():
		x.err = errDeadline
		return x
	case a.sent >= a.cfg.MaxRequests:
		x.err = errBudget
		return x
	case capped && a.perHost[host] >= a.cfg.MaxRequestsPerHost:
		x.err = errHostCap
		return x
	}
	if wait := a.cfg.Interval - time.Since(a.lastStart); a.cfg.Interval > 0 && wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			x.err = ctx.Err()
			if a.runOver() {
				x.err = errDeadline
			}
			return x
		case <-t.C:
		}
	}
	a.sent++
	if capped {
		a.perHost[host]++
	}
	a.lastStart = time.Now()
	c := a.client
	if !a.trusted(req.URL) {
		c = a.guarded
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	resp, err := c.Do(req.WithContext(ctx))
	if err != nil {
		x.elapsed = time.Since(a.lastStart)
		x.err = err
		if a.runOver() {
			x.err = errDeadline
		}
		return x
	}
	defer resp.Body.Close()
	x.status, x.header = resp.StatusCode, resp.Header
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, a.cfg.MaxBody+1))
	x.elapsed = time.Since(a.lastStart)
	if n > a.cfg.MaxBody {
		x.truncated = true
		buf.Truncate(int(a.cfg.MaxBody))
	} else if err != nil && a.runOver() {
		x.err = errDeadline
	} else if err != nil && !isStreamCut(err) {
		x.err = err
	}
	x.body = buf.Bytes()
	return x
}

// runOver reports whether the run's deadline has passed (or the run was
// cancelled).
func (a *Auditor) runOver() bool { return a.runErr != nil && a.runErr() != nil }

// isStreamCut reports a body that ended because the per-request deadline
// cut a stream (an SSE answer that stays open): what was read is kept.
func isStreamCut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// secretRe finds JWT-shaped strings and bearer credentials in evidence.
var secretRe = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*\.?[A-Za-z0-9_-]*`)

// redact replaces every occurrence of every known secret in s, whatever
// its length, then anything else shaped like a JWT by <jwt>. Occurrences
// are found in s as given (a label put in earlier can never be matched,
// nor hide part of a longer secret); overlapping or adjacent ones become
// one label, that of the longest secret starting there. A short secret
// may also hide unrelated text that happens to equal it: evidence reads
// worse, but no byte of a secret is ever shown.
func (a *Auditor) redact(s string) string {
	type hit struct {
		end   int
		label string
		n     int
	}
	var hits map[int]hit // by start
	for k, label := range a.secrets {
		if k == "" {
			continue
		}
		for i := 0; i <= len(s)-len(k); {
			j := strings.Index(s[i:], k)
			if j < 0 {
				break
			}
			start := i + j
			if hits == nil {
				hits = map[int]hit{}
			}
			if h, ok := hits[start]; !ok || len(k) > h.n {
				hits[start] = hit{end: start + len(k), label: label, n: len(k)}
			}
			i = start + 1 // occurrences may overlap
		}
	}
	if len(hits) > 0 {
		starts := make([]int, 0, len(hits))
		for i := range hits {
			starts = append(starts, i)
		}
		sort.Ints(starts)
		var b strings.Builder
		last := 0
		for k := 0; k < len(starts); {
			h := hits[starts[k]]
			b.WriteString(s[last:starts[k]])
			end := h.end
			for k++; k < len(starts) && starts[k] <= end; k++ {
				end = max(end, hits[starts[k]].end)
			}
			b.WriteString("<" + h.label + ">")
			last = end
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	return secretRe.ReplaceAllString(s, "<jwt>")
}

// secret registers a token so that evidence never shows it: as it is, as
// the URL query of TR-QUERY-TOKEN encodes it ("+" is %2B, "/" %2F, "="
// %3D) and with "/" escaped as some JSON encoders echo it ("\/").
func (a *Auditor) secret(tok, label string) {
	if tok == "" {
		return
	}
	for _, s := range []string{tok, url.QueryEscape(tok), url.PathEscape(tok), strings.ReplaceAll(tok, "/", `\/`)} {
		a.secrets[s] = label
	}
}

// evidence renders x as one line: the request line with the headers that
// matter, the status line, WWW-Authenticate, and a short body excerpt.
// Tokens are redacted.
func (a *Auditor) evidence(x *exchange) string {
	var b strings.Builder
	own := a.ownAnswer(x)
	b.WriteString(x.method)
	b.WriteByte(' ')
	if origin(x.url) == origin(a.endpoint) {
		b.WriteString(x.url.RequestURI())
	} else {
		b.WriteString(x.url.Redacted())
	}
	var hs []string
	for _, name := range []string{"Host", "Authorization", "Origin", "X-Forwarded-Host", "Forwarded", "Mcp-Method", "Mcp-Name", "MCP-Protocol-Version", "Mcp-Session-Id"} {
		for _, v := range x.reqHeader.Values(name) {
			if name == "Authorization" {
				if v = a.redact(v); len(v) > 48 {
					v = v[:24] + "…"
				}
			}
			hs = append(hs, name+": "+v)
		}
	}
	if len(hs) > 0 {
		b.WriteString(" [" + strings.Join(hs, "; ") + "]")
	}
	b.WriteString(" → ")
	if i := slices.IndexFunc(notSentReasons, func(ns notSent) bool { return errors.Is(x.err, ns.err) }); i >= 0 {
		b.WriteString(notSentReasons[i].note)
		return a.redact(b.String())
	}
	switch {
	case x.err != nil && x.status == 0:
		b.WriteString("no answer: " + shortErr(x.err))
	case !own:
		// Another host's answer: never quoted, so that a URL the audited
		// server hands the audit cannot make the report publish what some
		// other service says.
		fmt.Fprintf(&b, "%d %s", x.status, http.StatusText(x.status))
		if len(x.body) > 0 {
			fmt.Fprintf(&b, "; %d-byte body of another host, not quoted", len(x.body))
		}
	default:
		fmt.Fprintf(&b, "%d %s", x.status, http.StatusText(x.status))
		for _, v := range x.header.Values("WWW-Authenticate") {
			b.WriteString("; WWW-Authenticate: " + v)
		}
		if ex := excerpt(x.body, 160); ex != "" {
			b.WriteString("; body: " + ex)
		}
	}
	return a.redact(b.String())
}

// shortErr names a transport failure without a long chain.
func shortErr(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	if errors.Is(err, fetch.ErrForbiddenAddress) {
		return "refused by the SSRF guard: not a public address, nor one of the audited endpoint's address class"
	}
	return cut(err.Error(), 120)
}

// excerpt returns up to n bytes of body as printable text.
func excerpt(body []byte, n int) string {
	s := cut(strings.TrimSpace(string(body)), n)
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
