package jwks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/internal/fetch"
)

// Health is the state of a [Source] for readiness probes and dashboards.
type Health struct {
	// Issuer is Config.Issuer.
	Issuer string
	// Ready reports that a key set has been loaded: the source can verify
	// tokens (a failed refresh later keeps it ready, serving the last set).
	Ready bool
	// Keys is the number of usable keys served.
	Keys int
	// LastSuccess is when the served set was fetched (Config.Now); zero if
	// never. Its age is the age of the key set.
	LastSuccess time.Time
	// LastAttempt is when the last refresh ended, successful or not; zero
	// before the first one.
	LastAttempt time.Time
	// LastError is the error of the last refresh, nil if it succeeded.
	LastError error
	// Cause classifies LastError; "" when it is nil.
	Cause Cause
	// ConsecutiveFailures counts the refreshes that failed since the last
	// success.
	ConsecutiveFailures int
	// NextRefresh is when the background loop is scheduled to refresh
	// next (Config.Now plus the delay it chose after its last refresh:
	// RefreshInterval, or the backoff after a failure); in the past while
	// that refresh runs, zero before the first refresh ended and after
	// Close. On-demand refreshes (unknown kid) may come sooner.
	NextRefresh time.Time
}

// Cause is a stable, low-cardinality class of refresh failure, for logs,
// metric labels and the readiness answer. Its values, tried in this order
// by causeOf: "" (no failure), "issuer_mismatch" (the metadata names
// another issuer, RFC 8414 §3.3), "dns", "tls", "timeout", "connect"
// (another transport failure), "not_found" (404 or 410, or no metadata at
// any well-known URL), "http_status" (another non-200 status),
// "invalid_metadata", "invalid_set" (not a JWK Set, wrong media type, too
// large), "no_usable_keys", "closed" and "other". The set may grow;
// compare with a string, e.g. h.Cause == "timeout".
type Cause string

// The causes, in the order causeOf tries them.
const (
	causeNone        Cause = ""
	causeMixUp       Cause = "issuer_mismatch" // asmeta.ErrIssuerMismatch: metadata names another issuer (RFC 8414 §3.3)
	causeDNS         Cause = "dns"             // the host name does not resolve
	causeTLS         Cause = "tls"             // certificate or handshake failure
	causeTimeout     Cause = "timeout"         // FetchTimeout or a dial/read timeout
	causeConnect     Cause = "connect"         // other transport failure (refused, reset)
	causeNotFound    Cause = "not_found"       // 404 or 410, or no metadata document at any well-known URL
	causeStatus      Cause = "http_status"     // any other non-200 status
	causeMetadata    Cause = "invalid_metadata"
	causeInvalidSet  Cause = "invalid_set" // not a JWK Set, wrong media type, too large
	causeNoUsableKey Cause = "no_usable_keys"
	causeClosed      Cause = "closed"
	causeOther       Cause = "other"
)

// causeOf classifies a refresh error.
func causeOf(err error) Cause {
	if err == nil {
		return causeNone
	}
	var (
		dns  *net.DNSError
		cve  *tls.CertificateVerificationError
		uae  x509.UnknownAuthorityError
		hne  x509.HostnameError
		cie  x509.CertificateInvalidError
		rhe  tls.RecordHeaderError
		ae   tls.AlertError
		se   *fetch.StatusError
		nerr net.Error
	)
	switch {
	case errors.Is(err, asmeta.ErrIssuerMismatch):
		return causeMixUp
	case errors.As(err, &dns):
		return causeDNS
	case errors.As(err, &cve), errors.As(err, &uae), errors.As(err, &hne), errors.As(err, &cie),
		errors.As(err, &rhe), errors.As(err, &ae):
		return causeTLS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return causeTimeout
	case errors.Is(err, fetch.ErrTransport):
		return causeConnect
	case errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusGone):
		return causeNotFound
	case errors.As(err, &se):
		return causeStatus
	case errors.Is(err, asmeta.ErrNotFound):
		return causeNotFound
	case errors.Is(err, asmeta.ErrInvalidMetadata), errors.Is(err, asmeta.ErrInvalidIssuer):
		return causeMetadata
	case errors.Is(err, errNoUsableKeys):
		return causeNoUsableKey
	case errors.Is(err, errInvalidSet), errors.Is(err, fetch.ErrContentType), errors.Is(err, fetch.ErrTooLarge),
		errors.Is(err, fetch.ErrDecode):
		return causeInvalidSet
	case errors.Is(err, errClosed), errors.Is(err, context.Canceled):
		return causeClosed
	}
	return causeOther
}

// healthState is the part of a Source's state only health reads; the
// Source's mu guards it.
type healthState struct {
	ready       chan struct{} // closed at the first good set
	lastAttempt time.Time
	failures    int // consecutive
	nextRefresh time.Time
}

func newHealthState() healthState { return healthState{ready: make(chan struct{})} }

// record notes the end of a refresh at now. The caller holds mu.
func (h *healthState) record(now time.Time, err error) {
	h.lastAttempt = now
	if err != nil {
		h.failures++
		return
	}
	h.failures = 0
	select {
	case <-h.ready:
	default:
		close(h.ready)
	}
}

// scheduled notes that the loop sleeps for delay.
func (s *Source) scheduled(delay time.Duration) {
	s.mu.Lock()
	s.health.nextRefresh = s.cfg.Now().Add(delay)
	s.mu.Unlock()
}

// Health returns the state of the source. It takes the source's lock
// briefly and never does I/O.
func (s *Source) Health() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := Health{
		Issuer:              s.cfg.Issuer,
		LastSuccess:         s.lastSuccess,
		LastAttempt:         s.health.lastAttempt,
		LastError:           s.lastErr,
		Cause:               causeOf(s.lastErr),
		ConsecutiveFailures: s.health.failures,
		NextRefresh:         s.health.nextRefresh,
	}
	if s.closed {
		h.NextRefresh = time.Time{}
	}
	if set := s.set.Load(); set != nil {
		h.Ready, h.Keys = true, set.n
	}
	return h
}

// WaitReady waits until the source has loaded a first key set, or ctx is
// done. The background loop keeps retrying meanwhile (with its backoff),
// so a server that comes up a little later than this one is waited for.
// Bound ctx: this is the fail-fast check of a start-up, such as
//
//	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
//	defer cancel()
//	if err := src.WaitReady(ctx); err != nil { log.Fatal(err) }
//
// It returns nil once a key set is loaded; otherwise an error that wraps
// ctx's error and the last refresh error, whose text ("jwks: no key set
// loaded: issuer …") names the issuer and the [Cause] ("dns", "tls",
// "not_found", "issuer_mismatch", …).
func (s *Source) WaitReady(ctx context.Context) error {
	select {
	case <-s.health.ready:
		return nil
	case <-ctx.Done():
	}
	h := s.Health()
	if h.Ready {
		return nil
	}
	if h.LastError == nil {
		return fmt.Errorf("%w: issuer %q: no refresh finished yet: %w", errNotReady, h.Issuer, context.Cause(ctx))
	}
	return fmt.Errorf("%w: issuer %q: %s: %w (%w)", errNotReady, h.Issuer, h.Cause, h.LastError, context.Cause(ctx))
}

// RefreshObserver is told about each refresh of a [Source] (Config.Observer),
// background and on-demand, for telemetry. It is called on the refresh's
// goroutine and must not block.
type RefreshObserver interface {
	// RefreshStart is called before a refresh fetches anything. The
	// context it returns is the one the fetch runs under (add a span to
	// ctx and return it); it must be derived from ctx. For an on-demand
	// refresh, ctx carries the values (the trace) of the request that
	// started it, without its cancellation.
	RefreshStart(ctx context.Context, e RefreshStart) context.Context
	// RefreshEnd is called once the refresh's outcome is published, with
	// the context RefreshStart returned.
	RefreshEnd(ctx context.Context, e RefreshEnd)
}

// RefreshStart describes a refresh that begins.
type RefreshStart struct {
	// Issuer is Config.Issuer.
	Issuer string
	// OnDemand is true for a refresh started by a request (unknown kid,
	// no keys yet, [Source.Refresh]), false for the background loop.
	OnDemand bool
}

// RefreshEnd describes a refresh that ended.
type RefreshEnd struct {
	RefreshStart
	// Duration is the wall time of the refresh.
	Duration time.Duration
	// Err is nil on success; on failure the previous set is kept.
	Err error
	// Cause classifies Err ([Cause]).
	Cause Cause
	// Keys is the number of usable keys served after the refresh (the
	// previous set's on failure; 0 if none).
	Keys int
	// LastSuccess is when the served set was fetched; zero if never.
	LastSuccess time.Time
}

// observeStart calls Config.Observer's RefreshStart, if set, and returns
// the fetch context and the function to call at the end.
func (s *Source) observeStart(ctx context.Context, onDemand bool) (context.Context, func(*keySet, error)) {
	o := s.cfg.Observer
	if o == nil {
		return ctx, func(*keySet, error) {}
	}
	st := RefreshStart{Issuer: s.cfg.Issuer, OnDemand: onDemand}
	octx := o.RefreshStart(ctx, st)
	if octx == nil {
		octx = ctx
	}
	begin := time.Now()
	return octx, func(_ *keySet, err error) {
		e := RefreshEnd{RefreshStart: st, Duration: time.Since(begin), Err: err, Cause: causeOf(err)}
		s.mu.Lock()
		e.LastSuccess = s.lastSuccess
		s.mu.Unlock()
		if cur := s.set.Load(); cur != nil {
			e.Keys = cur.n
		}
		o.RefreshEnd(octx, e)
	}
}
