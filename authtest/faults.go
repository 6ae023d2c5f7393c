package authtest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Fault makes an [Issuer] endpoint misbehave, for testing how clients cope
// with a failing authorization server. Set it with [Issuer.SetFault];
// requests are counted before the fault applies. The faults are:
//
//	""                    none: the endpoint is served normally
//	"unavailable"         503 Service Unavailable without Retry-After
//	"too-many-requests"   429 Too Many Requests with a Retry-After header of
//	                      [IssuerConfig.RetryAfter] seconds
//	"server-error"        500 Internal Server Error
//	"hang"                nothing is sent; the request is held until the
//	                      client gives up (its context ends or it closes the
//	                      connection) or the test ends. No goroutine leaks:
//	                      the issuer's cleanup releases every held request.
//	"garbage"             200, Content-Type application/json, a body that is
//	                      not JSON
//	"empty"               200, Content-Type application/json, an empty body
//	"empty-key-set"       200 with {"keys":[]}
//	"huge"                200 with a syntactically valid JSON object
//	                      [IssuerConfig.HugeBodyBytes] long (100 MiB by
//	                      default), chunked without Content-Length and
//	                      written lazily; it stops as soon as the client
//	                      stops reading or the test ends, so a client that
//	                      caps its reads returns promptly
//	"refuse"              the connection is accepted, then reset without a
//	                      response
//	"not-found"           404, as if the endpoint did not exist
//	"wrong-content-type"  the normal body with Content-Type text/html, to
//	                      test media-type checks
//
// Two faults are for the introspection endpoint only (RFC 7662); without
// them it behaves like a real authorization server: a token minted by
// [Issuer.Token] is reported {"active":true, …its claims…} while
// [Issuer.Now] is within its nbf/exp, anything else {"active":false}
// (RFC 7662 §2.2).
//
//	"inactive"            every token is reported {"active":false}
//	"always-active"       a lax (hostile) server: known tokens are reported
//	                      active with their claims even when expired or not
//	                      yet valid, unknown ones as {"active":true} with no
//	                      other member; to check that the resource server
//	                      enforces exp, iss and aud itself
type Fault string

// The faults [Issuer.SetFault] knows; see [Fault].
const (
	faultUnavailable      Fault = "unavailable"
	faultTooManyRequests  Fault = "too-many-requests"
	faultServerError      Fault = "server-error"
	faultHang             Fault = "hang"
	faultGarbage          Fault = "garbage"
	faultEmpty            Fault = "empty"
	faultEmptyKeySet      Fault = "empty-key-set"
	faultHuge             Fault = "huge"
	faultRefuse           Fault = "refuse"
	faultNotFound         Fault = "not-found"
	faultWrongContentType Fault = "wrong-content-type"
	faultInactive         Fault = "inactive"
	faultAlwaysActive     Fault = "always-active"
)

// known reports whether f is a [Fault] SetFault accepts ("" included).
func (f Fault) known() bool {
	switch f {
	case "", faultUnavailable, faultTooManyRequests, faultServerError, faultHang, faultGarbage,
		faultEmpty, faultEmptyKeySet, faultHuge, faultRefuse, faultNotFound, faultWrongContentType,
		faultInactive, faultAlwaysActive:
		return true
	}
	return false
}

// SetFault sets fault f on each endpoint, named by its URL path (for
// example "/.well-known/oauth-authorization-server/tenant1") or by a full
// URL of this issuer: iss.SetFault("hang", iss.JWKSURL),
// iss.SetFault("unavailable", iss.MetadataURLs...). Any path can be
// faulted, including ones the issuer does not otherwise serve. The fault ""
// restores an endpoint. SetFault panics on a fault [Fault] does not list,
// on "inactive" or "always-active" for another endpoint than
// [Issuer.IntrospectionURL], and without an endpoint.
func (i *Issuer) SetFault(f Fault, endpoints ...string) {
	if !f.known() {
		panic(fmt.Sprintf("authtest: unknown fault %q", string(f)))
	}
	if len(endpoints) == 0 {
		panic("authtest: SetFault needs an endpoint, e.g. iss.JWKSURL")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, e := range endpoints {
		p := toPath(e)
		if (f == faultInactive || f == faultAlwaysActive) && p != i.introspectPath {
			panic(fmt.Sprintf("authtest: fault %q is for the introspection endpoint only", string(f)))
		}
		if f == "" {
			delete(i.faults, p)
			continue
		}
		i.faults[p] = f
	}
}

// garbageBody is served by the "garbage" fault.
const garbageBody = "<html><body>502 Bad Gateway</body></html>\x00\xff{"

func (i *Issuer) serveFault(w http.ResponseWriter, r *http.Request, f Fault, path string) {
	switch f {
	case faultInactive, faultAlwaysActive:
		i.serveIntrospection(w, r, f)
	case faultUnavailable:
		http.Error(w, "authtest: unavailable", http.StatusServiceUnavailable)
	case faultTooManyRequests:
		secs := int64((i.cfg.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		http.Error(w, "authtest: too many requests", http.StatusTooManyRequests)
	case faultServerError:
		http.Error(w, "authtest: internal error", http.StatusInternalServerError)
	case faultNotFound:
		http.NotFound(w, r)
	case faultHang:
		select {
		case <-r.Context().Done():
		case <-i.closed:
		}
		// Nothing is sent, even then: a handler that returns normally
		// gets an empty 200 written for it, which a client that has just
		// given up can still read (net/http's transport returned it in
		// place of context.Canceled in about 1 of 30 runs under -race).
		// Aborting closes the connection without an answer.
		panic(http.ErrAbortHandler)
	case faultGarbage:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, garbageBody)
	case faultEmpty:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	case faultEmptyKeySet:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"keys":[]}`)
	case faultHuge:
		i.serveHuge(w, r)
	case faultRefuse:
		refuse(w)
	case faultWrongContentType:
		i.route(&htmlWriter{ResponseWriter: w}, r, path)
	default:
		http.Error(w, fmt.Sprintf("authtest: unknown fault %q", string(f)), http.StatusInternalServerError)
	}
}

// htmlWriter rewrites Content-Type to text/html when the header is sent.
type htmlWriter struct {
	http.ResponseWriter
	sent bool
}

func (h *htmlWriter) WriteHeader(code int) {
	if !h.sent {
		h.sent = true
		h.Header().Set("Content-Type", "text/html; charset=utf-8")
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *htmlWriter) Write(b []byte) (int, error) {
	if !h.sent {
		h.WriteHeader(http.StatusOK)
	}
	return h.ResponseWriter.Write(b)
}

// serveHuge writes {"keys":[],"padding":"xxxx…"}, HugeBodyBytes long (at
// least the JSON skeleton), without Content-Length.
func (i *Issuer) serveHuge(w http.ResponseWriter, r *http.Request) {
	const head, tail = `{"keys":[],"padding":"`, `"}`
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	chunk := []byte(strings.Repeat("x", 32<<10))
	_, err := io.WriteString(w, head)
	left := i.cfg.HugeBodyBytes - int64(len(head)+len(tail))
	for err == nil && left > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-i.closed:
			return
		default:
		}
		n := min(left, int64(len(chunk)))
		_, err = w.Write(chunk[:n])
		left -= n
	}
	if err == nil {
		_, _ = io.WriteString(w, tail)
	}
}

// refuse hijacks the connection and resets it (SO_LINGER 0) so the client
// sees a reset connection rather than a response.
func refuse(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	conn, _, err := rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // HTTP/2: abort the stream instead
	}
	nc := conn
	if u, ok := conn.(interface{ NetConn() net.Conn }); ok {
		nc = u.NetConn() // *tls.Conn
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
