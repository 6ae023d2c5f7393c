package introspect

import (
	"context"
	"errors"
	"time"

	"github.com/mcpguard/mcpguard/validate"
)

// CallObserver is told about each call to the introspection endpoint
// (Config.Observer), for telemetry. Concurrent presentations of one token
// share one call, observed once. It is called on the call's goroutine and
// must not block.
type CallObserver interface {
	// CallStart is called before the request is made, with the context
	// of the request that started it (its values, without its
	// cancellation). The context it returns is the one the call runs
	// under (add a span to ctx and return it); it must be derived from
	// ctx.
	CallStart(ctx context.Context, e CallStart) context.Context
	// CallEnd is called when the call ended, with the context CallStart
	// returned.
	CallEnd(ctx context.Context, e CallEnd)
}

// CallStart describes a call that begins.
type CallStart struct {
	// Issuer is Config.Issuer.
	Issuer string
}

// CallEnd describes a call that ended. It holds no token and no response
// member.
type CallEnd struct {
	CallStart
	// Duration is the wall time of the call, discovery included.
	Duration time.Duration
	// Outcome is a stable, low-cardinality class of the answer:
	//   - "active": the token is active and passed every check.
	//   - "inactive": the endpoint answered "active": false.
	//   - "rejected": the token is active but a check refused it
	//     (audience, issuer, lifetime, type, …), or the response is
	//     malformed.
	//   - "client_auth": the endpoint refused this resource server's own
	//     credentials ([ErrClientAuth]).
	//   - "unavailable": no answer (transport, status, discovery, timeout;
	//     [ErrEndpoint]).
	Outcome string
	// Err is the call's error, nil for an active token.
	Err error
}

// The outcomes of CallEnd.Outcome.
const (
	outcomeActive      = "active"
	outcomeInactive    = "inactive"
	outcomeRejected    = "rejected"
	outcomeClientAuth  = "client_auth"
	outcomeUnavailable = "unavailable"
)

// outcomeOf classifies err.
func outcomeOf(err error) string {
	switch {
	case err == nil:
		return outcomeActive
	case errors.Is(err, validate.Error{Reason: "inactive"}):
		return outcomeInactive
	case errors.Is(err, ErrClientAuth):
		return outcomeClientAuth
	case errors.Is(err, validate.ErrKeysUnavailable):
		return outcomeUnavailable
	}
	return outcomeRejected
}

// observed is introspect, reported to Config.Observer when set.
func (i *Introspector) observed(ctx context.Context, raw string, key cacheKey) (*validate.Claims, error) {
	o := i.cfg.Observer
	if o == nil {
		return i.introspect(ctx, raw, key)
	}
	st := CallStart{Issuer: i.cfg.Issuer}
	if octx := o.CallStart(ctx, st); octx != nil {
		ctx = octx
	}
	begin := time.Now()
	c, err := i.introspect(ctx, raw, key)
	o.CallEnd(ctx, CallEnd{CallStart: st, Duration: time.Since(begin), Outcome: outcomeOf(err), Err: err})
	return c, err
}
