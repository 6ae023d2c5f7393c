package jwks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/MicahParks/jwkset"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/internal/fetch"
)

// loop is the one long-lived goroutine: it runs the first refresh, then
// refreshes every RefreshInterval, or sooner with backoff after a failure.
// An on-demand refresh that succeeds while it sleeps puts it back on the
// normal schedule: RefreshInterval after that success, backoff reset.
func (s *Source) loop(first *flight) {
	defer s.wg.Done()
	minBackoff := min(time.Second, s.cfg.RefreshRateLimit)
	maxBackoff := max(s.cfg.RefreshRateLimit, maxRetryBackoff)
	backoff := minBackoff
	f, owned := first, true
	for {
		if owned {
			s.run(context.Background(), f, false)
		} else {
			select {
			case <-f.done:
			case <-s.stop:
				return
			}
		}
		var delay time.Duration
		delay, backoff = nextDelay(f.err, backoff, minBackoff, maxBackoff, s.cfg.RefreshInterval)
		s.scheduled(delay) // health.go
		t := time.NewTimer(delay)
	sleep:
		for {
			select {
			case <-t.C:
				break sleep
			case <-s.sched.kick:
				if s.lastOK() { // a kick older than a later failure is ignored
					t.Reset(s.cfg.RefreshInterval)
					backoff = minBackoff
					s.scheduled(s.cfg.RefreshInterval) // health.go
				}
			case <-s.stop:
				t.Stop()
				return
			}
		}
		var err error
		if f, owned, err = s.begin(context.Background(), false, nil); err != nil {
			return // closed
		}
	}
}

// nextDelay returns how long the loop sleeps after a refresh that ended
// with err, and the next backoff. Success: interval, and the backoff resets.
// Failure: the current backoff (at least the server's Retry-After, at most
// interval), and the backoff doubles up to limit.
func nextDelay(err error, backoff, minBackoff, limit, interval time.Duration) (delay, next time.Duration) {
	if err == nil {
		return interval, minBackoff
	}
	delay = backoff
	var se *fetch.StatusError
	if errors.As(err, &se) && se.RetryAfter > delay {
		delay = se.RetryAfter
	}
	delay = min(delay, interval)
	next = min(max(backoff*2, minBackoff), max(limit, minBackoff))
	return delay, next
}

// run performs flight f with its own deadline (parent carries values, such
// as a trace, never a caller's cancellation), records the outcome and
// releases the waiters. Close aborts it. onDemand labels it for
// Config.Observer.
func (s *Source) run(parent context.Context, f *flight, onDemand bool) {
	ctx, cancel := context.WithTimeout(parent, s.cfg.FetchTimeout)
	defer cancel()
	ctx, end := s.observeStart(ctx, onDemand) // health.go
	s.wg.Add(1)                               // the caller holds a count, so this cannot race with Wait
	go func() {
		defer s.wg.Done()
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()

	s.fetches.Add(1)
	set, err := s.refresh(ctx)
	if err != nil {
		s.failures.Add(1)
		level := slog.LevelWarn
		select {
		case <-s.stop: // aborted by Close: not a failure of the issuer
			level = slog.LevelDebug
		default:
		}
		s.log.Log(ctx, level, "jwks: refresh failed; keeping the previous key set", "error", err, "have_keys", s.set.Load() != nil)
	}
	s.mu.Lock()
	f.err = err
	s.lastErr = err
	if err == nil {
		s.lastSuccess = s.cfg.Now()
		s.set.Store(set) // under mu so that Health is consistent
	}
	s.health.record(s.cfg.Now(), err) // health.go
	s.running = nil
	s.mu.Unlock()
	close(f.done)
	end(set, err)
	if err == nil && f.onDemand {
		s.kickLoop()
	}
}

// refresh discovers the jwks_uri if needed, fetches and filters the set,
// and mirrors it to the storage. The caller publishes it; on any failure
// the previous snapshot stays.
func (s *Source) refresh(ctx context.Context) (*keySet, error) {
	u := s.cfg.JWKSURL
	if u == "" {
		if s.discovered == "" {
			md, err := asmeta.Discover(ctx, s.cfg.HTTPClient, s.cfg.Issuer)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", errDiscovery, err)
			}
			if md.JWKSURI == "" {
				return nil, fmt.Errorf("%w: %w: metadata has no jwks_uri", errDiscovery, asmeta.ErrInvalidMetadata)
			}
			s.discovered = md.JWKSURI
			s.log.Info("jwks: discovered jwks_uri", "jwks_uri", md.JWKSURI)
		}
		u = s.discovered
	}
	resp, err := fetch.Get(ctx, s.cfg.HTTPClient, u, s.cfg.MaxBytes)
	if err != nil {
		var se *fetch.StatusError
		if s.cfg.JWKSURL == "" && errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusGone) {
			s.discovered = "" // the AS may have moved its keys: discover again next time
		}
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	set, good, dropped, err := parseSet(resp.Body)
	for _, d := range dropped {
		level := slog.LevelDebug
		if d.warn {
			level = slog.LevelWarn
		}
		s.log.Log(ctx, level, "jwks: key dropped", "kid", d.kid, "reason", d.reason)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	s.mirror(ctx, good)
	if s.set.Load() == nil {
		s.log.Info("jwks: key set loaded", "keys", set.n, "dropped", len(dropped))
	} else {
		s.log.Debug("jwks: key set refreshed", "keys", set.n, "dropped", len(dropped))
	}
	return set, nil
}

// mirror writes the accepted keys to Config.Storage, if set. Keys that jwkset cannot
// represent are left out of the mirror only; they are still served.
func (s *Source) mirror(ctx context.Context, good []parsedKey) {
	if s.cfg.Storage == nil {
		return
	}
	out := make([]jwkset.JWK, 0, len(good))
	for _, pk := range good {
		ops := make([]jwkset.KEYOPS, len(pk.ops))
		for i, o := range pk.ops {
			ops[i] = jwkset.KEYOPS(o)
		}
		j, err := jwkset.NewJWKFromKey(pk.jwk.Key, jwkset.JWKOptions{
			Metadata: jwkset.JWKMetadataOptions{
				ALG:    jwkset.ALG(pk.jwk.Algorithm),
				KID:    pk.jwk.KeyID,
				KEYOPS: ops,
				USE:    jwkset.USE(pk.jwk.Use),
			},
			X509: jwkset.JWKX509Options{X5C: pk.jwk.Certificates},
		})
		if err != nil {
			s.log.Debug("jwks: key not mirrored to storage", "kid", pk.jwk.KeyID, "error", err)
			continue
		}
		out = append(out, j)
	}
	if err := s.cfg.Storage.KeyReplaceAll(ctx, out); err != nil {
		s.log.Warn("jwks: writing storage failed", "error", err)
	}
}
