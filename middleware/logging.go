package middleware

import (
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// defaultRefusalLogRate is the number of refusals logged per second for
// each [Reason] when Config.RefusalLogRate is zero.
const defaultRefusalLogRate = 5

// refusalSampler bounds the refusal records: at most rate per Reason in
// each one-second window (Config.Now), the rest counted and reported as
// "suppressed" on the next record of that Reason. A flood of bad tokens
// therefore writes at most rate lines a second per reason, about two
// dozen reasons in all. Its zero value is ready; it is safe for
// concurrent use.
type refusalSampler struct {
	buckets sync.Map // Reason -> *refusalBucket; bounded by the Reason set
}

type refusalBucket struct {
	mu         sync.Mutex
	window     int64 // Unix second of the current window
	logged     int   // records in the window
	suppressed int   // records dropped since the last one logged
}

// allow reports whether a refusal of reason at now may be logged and, if
// so, how many were suppressed before it.
func (s *refusalSampler) allow(reason Reason, now time.Time, rate int) (ok bool, suppressed int) {
	if rate < 0 {
		return true, 0
	}
	v, found := s.buckets.Load(reason)
	if !found {
		v, _ = s.buckets.LoadOrStore(reason, &refusalBucket{})
	}
	b := v.(*refusalBucket)
	sec := now.Unix()
	b.mu.Lock()
	defer b.mu.Unlock()
	if sec != b.window {
		b.window, b.logged = sec, 0
	}
	if b.logged >= rate {
		b.suppressed++
		return false, 0
	}
	b.logged++
	suppressed, b.suppressed = b.suppressed, 0
	return true, suppressed
}

// logRefusal writes the operator's record of a refusal: Info for
// client errors (the default slog level shows them), Warn for 503s,
// exhausted step-ups and misconfiguration, sampled per Reason. It carries
// the reason code, the internal cause, the MCP method and tool labels of
// [Decision] (never a client-chosen name the policy does not list), the
// revision, session and arguments' digest of the decision event, the
// client and the issuer of a valid token, and its current actor's subject
// ([Principal.Actors]; "actors" counts the chain when longer); never the
// token or the subject.
func (m *Middleware) logRefusal(r *http.Request, rf *refusal) {
	ctx := r.Context()
	level := max(rf.level, slog.LevelInfo)
	if !m.log.Enabled(ctx, level) {
		return
	}
	rate := m.cfg.RefusalLogRate
	if rate == 0 {
		rate = defaultRefusalLogRate
	}
	ok, suppressed := m.refusals.allow(rf.reason, m.cfg.Now(), rate)
	if !ok {
		return
	}
	attrs := make([]slog.Attr, 0, 14)
	attrs = append(attrs,
		slog.Int("status", rf.status),
		slog.String("reason", string(rf.reason)),
		slog.String("error", rf.err.Error()),
		slog.String("http_method", r.Method),
		slog.String("path", r.URL.Path))
	if g := rf.g; g != nil {
		if g.method != "" {
			attrs = append(attrs, slog.String("mcp_method", g.method))
		}
		if g.name != "" {
			attrs = append(attrs, slog.String("tool", g.name))
		}
	}
	if rf.rule != "" {
		attrs = append(attrs, slog.String("rule", rf.rule))
	}
	// The decision event's request fields (docs/operations.md, "Decision
	// events"); never the arguments, their digest only.
	if v := versionLabel(r.Header); v != "" {
		attrs = append(attrs, slog.String("revision", v))
	}
	if sid, err := sessionID(r.Header); err == nil && sid != "" {
		attrs = append(attrs, slog.String("session", sid))
	}
	if d := argsDigest(rf.args); d != "" {
		attrs = append(attrs, slog.String("arguments_sha256", d))
	}
	if p := rf.p; p != nil {
		attrs = append(attrs, slog.String("client_id", p.ClientID), slog.String("issuer", p.Issuer))
		// The party acting for the subject (RFC 8693 "act"), an agent
		// rather than a user; the prior actors are counted only.
		if a, err := p.Actors(); err == nil && len(a) > 0 {
			attrs = append(attrs, slog.String("actor", a[0].Subject))
			if len(a) > 1 {
				attrs = append(attrs, slog.Int("actors", len(a)))
			}
		}
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int("suppressed", suppressed))
	}
	m.log.LogAttrs(ctx, level, "middleware: request refused", attrs...)
}
