package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
)

// logRequest writes the one line of a request to a route, the decision
// event of docs/operations.md ("Decision events"): who (issuer, subject,
// client, tenant), in which session, which operation and revision, the
// SHA-256 of its arguments, the decision (the middleware's, or the
// proxy's own refusal: Host check, rate limit, upstream identity), its
// reason and rule, the entries a list answer left out, what the upstream
// answered and how long it took. Fields not known are left out; never a
// token or the arguments.
func (px *Proxy) logRequest(r *http.Request, st *reqState) {
	d := &st.decision
	status := d.Status
	outcome := string(d.Reason)
	switch {
	case d.Reason == "": // the middleware recorded no decision
		outcome = "not_decided"
	case st.proxyErr != "":
		outcome = st.proxyErr
	}
	if status == 0 { // passed: what the client got
		status = cmp.Or(st.errStatus, st.upstreamStatus)
	}
	level := slog.LevelInfo
	if st.proxyErr != "" && st.proxyErr != "client_gone" {
		level = slog.LevelWarn
	}
	attrs := make([]slog.Attr, 0, 22)
	attrs = append(attrs,
		slog.String("route", st.route.cfg.Resource),
		slog.String("http_method", r.Method))
	str := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	str("mcp_method", d.Method)
	str("name", d.Name)
	str("revision", d.ProtocolVersion)
	if p := d.Principal; p != nil {
		str("issuer", p.Issuer)
		str("subject", p.Subject)
		str("client_id", p.ClientID)
		str("tenant", p.Tenant)
		if p.Anonymous {
			attrs = append(attrs, slog.Bool("anonymous", true))
		}
	}
	str("session", d.Session)
	str("arguments_sha256", d.ArgumentsSHA256)
	str("rule", d.Rule)
	if len(d.Hidden) > 0 {
		attrs = append(attrs, slog.Any("hidden", d.Hidden), slog.Int("hidden_count", len(d.Hidden)))
	}
	str("reason", string(d.Reason))
	attrs = append(attrs,
		slog.String("outcome", outcome),
		slog.Int("status", status),
		slog.String("identity", st.route.identity.mode()),
		slog.Duration("latency", px.now().Sub(st.start)))
	px.log.LogAttrs(r.Context(), level, "mcp request", attrs...)
}

// minLevel is a slog.Handler passing records at or above level only.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
}

// discard is an io.Writer that drops everything (ReverseProxy's own log:
// the proxy logs failures itself).
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// copyBufferSize is the size of the buffers copying upstream answers: an
// idle open stream holds one.
const copyBufferSize = 4 << 10

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

// bufferPool is the ReverseProxy's httputil.BufferPool.
type bufferPool struct{}

func (bufferPool) Get() []byte  { return *copyBuffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { copyBuffers.Put(&b) }

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
