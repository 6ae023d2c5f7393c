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
	// Outcome is a stable, low-cardinality class of the answer.
	Outcome Outcome
	// Err is the call's error, nil for an active token.
	Err error
}

// Outcome classifies an introspection call.
type Outcome string

// Outcomes.
const (
	// OutcomeActive: the token is active and passed every check.
	OutcomeActive Outcome = "active"
	// OutcomeInactive: the endpoint answered "active": false.
	OutcomeInactive Outcome = "inactive"
	// OutcomeRejected: the token is active but a check refused it
	// (audience, issuer, lifetime, type, …), or the response is malformed.
	OutcomeRejected Outcome = "rejected"
	// OutcomeClientAuth: the endpoint refused this resource server's own
	// credentials ([ErrClientAuth]).
	OutcomeClientAuth Outcome = "client_auth"
	// OutcomeUnavailable: no answer (transport, status, discovery,
	// timeout; [ErrEndpoint]).
	OutcomeUnavailable Outcome = "unavailable"
)

// outcomeOf classifies err.
func outcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeActive
	case errors.Is(err, validate.Error{Reason: "inactive"}):
		return OutcomeInactive
	case errors.Is(err, ErrClientAuth):
		return OutcomeClientAuth
	case errors.Is(err, validate.ErrKeysUnavailable):
		return OutcomeUnavailable
	}
	return OutcomeRejected
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
