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
// with a failing authorization server. Set it with [Issuer.SetFault],
// [Issuer.SetFaultFor] or [Issuer.SetMetadataFault]. Requests are counted
// before the fault applies.
type Fault int

const (
	// FaultNone serves the endpoint normally.
	FaultNone Fault = iota
	// FaultUnavailable answers 503 Service Unavailable without Retry-After.
	FaultUnavailable
	// FaultTooManyRequests answers 429 Too Many Requests with a Retry-After
	// header of [IssuerConfig.RetryAfter] seconds.
	FaultTooManyRequests
	// FaultServerError answers 500 Internal Server Error.
	FaultServerError
	// FaultHang sends nothing and holds the request until the client gives up
	// (its context ends or it closes the connection) or the issuer is closed.
	// It leaks no goroutine: [Issuer.Close] releases every held request.
	FaultHang
	// FaultGarbage answers 200 with Content-Type application/json and a body
	// that is not JSON.
	FaultGarbage
	// FaultEmpty answers 200 with Content-Type application/json and an empty
	// body.
	FaultEmpty
	// FaultEmptyKeySet answers 200 with {"keys":[]}.
	FaultEmptyKeySet
	// FaultHuge answers 200 with a syntactically valid JSON object
	// [IssuerConfig.HugeBodyBytes] long (100 MiB by default), chunked
	// without Content-Length and written lazily. It stops as soon as the
	// client stops reading or the issuer is closed, so a client that caps
	// its reads returns promptly.
	FaultHuge
	// FaultRefuse accepts the request, then resets the TCP connection
	// without a response.
	FaultRefuse
	// FaultNotFound answers 404, as if the endpoint did not exist.
	FaultNotFound
	// FaultWrongContentType serves the normal body with Content-Type
	// text/html, to test media-type checks.
	FaultWrongContentType
)

var faultNames = [...]string{
	FaultNone:             "none",
	FaultUnavailable:      "unavailable",
	FaultTooManyRequests:  "too-many-requests",
	FaultServerError:      "server-error",
	FaultHang:             "hang",
	FaultGarbage:          "garbage",
	FaultEmpty:            "empty",
	FaultEmptyKeySet:      "empty-key-set",
	FaultHuge:             "huge",
	FaultRefuse:           "refuse",
	FaultNotFound:         "not-found",
	FaultWrongContentType: "wrong-content-type",
}

// Faults returns every fault except [FaultNone], for table-driven tests.
func Faults() []Fault {
	out := make([]Fault, 0, len(faultNames)-1)
	for f := FaultNone + 1; int(f) < len(faultNames); f++ {
		out = append(out, f)
	}
	return out
}

// String returns a short lowercase name such as "hang", usable in t.Run.
func (f Fault) String() string {
	if f >= 0 && int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "fault(" + strconv.Itoa(int(f)) + ")"
}

// SetFault sets the fault of the JWKS endpoint. [FaultNone] restores it.
func (i *Issuer) SetFault(f Fault) { i.SetFaultFor(i.jwksPath, f) }

// SetMetadataFault sets f on every well-known metadata URL
// ([Issuer.MetadataURLs]).
func (i *Issuer) SetMetadataFault(f Fault) {
	for _, p := range i.metaPaths {
		i.SetFaultFor(p, f)
	}
}

// SetFaultFor sets the fault of one endpoint, named by its URL path (for
// example "/.well-known/oauth-authorization-server/tenant1") or by a full URL
// of this issuer (for example [Issuer.IntrospectionURL]). Any path can be
// faulted, including ones the issuer does not otherwise serve.
func (i *Issuer) SetFaultFor(pathOrURL string, f Fault) {
	p := toPath(pathOrURL)
	i.mu.Lock()
	defer i.mu.Unlock()
	if f == FaultNone {
		delete(i.faults, p)
		return
	}
	i.faults[p] = f
}

// garbageBody is served by FaultGarbage.
const garbageBody = "<html><body>502 Bad Gateway</body></html>\x00\xff{"

func (i *Issuer) serveFault(w http.ResponseWriter, r *http.Request, f Fault, path string) {
	switch f {
	case FaultUnavailable:
		http.Error(w, "authtest: unavailable", http.StatusServiceUnavailable)
	case FaultTooManyRequests:
		secs := int64((i.cfg.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		http.Error(w, "authtest: too many requests", http.StatusTooManyRequests)
	case FaultServerError:
		http.Error(w, "authtest: internal error", http.StatusInternalServerError)
	case FaultNotFound:
		http.NotFound(w, r)
	case FaultHang:
		select {
		case <-r.Context().Done():
		case <-i.closed:
		}
	case FaultGarbage:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, garbageBody)
	case FaultEmpty:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	case FaultEmptyKeySet:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"keys":[]}`)
	case FaultHuge:
		i.serveHuge(w, r)
	case FaultRefuse:
		refuse(w)
	case FaultWrongContentType:
		i.route(&htmlWriter{ResponseWriter: w}, r, path)
	default:
		http.Error(w, fmt.Sprintf("authtest: unknown fault %d", int(f)), http.StatusInternalServerError)
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
