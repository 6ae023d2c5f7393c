package otelguard

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

var (
	_ jwks.RefreshObserver                        = (*Telemetry)(nil)
	_ introspect.CallObserver                     = (*Telemetry)(nil)
	_ func(context.Context, validate.Observation) = (*Telemetry)(nil).observeValidation
)

type validationKey struct {
	cache  string
	result string
}

// validationResults maps validate refusals to the result attribute.
var validationResults = []struct {
	err  error
	code string
}{
	{validate.Error{Reason: "expired"}, "expired"},
	{validate.Error{Reason: "not_yet_valid"}, "not_yet_valid"},
	{validate.Error{Reason: "issued_at"}, "not_yet_valid"},
	{validate.Error{Reason: "lifetime"}, "lifetime"},
	{validate.Error{Reason: "audience"}, "audience"},
	{validate.Error{Reason: "issuer"}, "issuer"},
	{validate.Error{Reason: "client"}, "client"},
	{validate.Error{Reason: "signature"}, "signature"},
	{validate.Error{Reason: "unknown_key"}, "unknown_key"},
	{validate.ErrKeysUnavailable, "keys_unavailable"},
	{validate.Error{Reason: "type"}, "type"},
	{validate.Error{Reason: "algorithm"}, "algorithm"},
	{validate.Error{Reason: "too_large"}, "too_large"},
	{validate.Error{Reason: "missing_claim"}, "missing_claim"},
	{validate.Error{Reason: "inactive"}, "inactive"},
	{validate.Error{Reason: "malformed"}, "malformed"},
}

func validationResult(err error) string {
	if err == nil {
		return "ok"
	}
	for _, r := range validationResults {
		if errors.Is(err, r.err) {
			return r.code
		}
	}
	return "other"
}

// observeValidation records one Validate call: [Telemetry.Instrument]
// sets it as validate.Config.Observer. A
// successful call records without allocating.
func (t *Telemetry) observeValidation(ctx context.Context, o validate.Observation) {
	k := validationKey{o.Cache, validationResult(o.Err)}
	opts := t.valOpts.get(k, func() attribute.Set {
		return attribute.NewSet(attribute.String("mcpguard.token_cache", k.cache), attribute.String("mcpguard.validation.result", k.result))
	})
	t.validation.Record(ctx, o.Duration.Seconds(), opts.rec...)
	switch o.Cache {
	case "hit":
		t.cacheLookups.Add(ctx, 1, t.hit.add...)
	case "miss":
		t.cacheLookups.Add(ctx, 1, t.miss.add...)
	}
}

func chainValidation(a, b func(context.Context, validate.Observation)) func(context.Context, validate.Observation) {
	return func(ctx context.Context, o validate.Observation) {
		a(ctx, o)
		b(ctx, o)
	}
}

// RefreshStart implements jwks.RefreshObserver: it starts the span
// "mcpguard.jwks.refresh", a child of the request that started an
// on-demand refresh.
func (t *Telemetry) RefreshStart(ctx context.Context, e jwks.RefreshStart) context.Context {
	trigger := "background"
	if e.OnDemand {
		trigger = "on_demand"
	}
	ctx, _ = t.tracer.Start(ctx, "mcpguard.jwks.refresh", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String(attrIssuer, e.Issuer), attribute.String("mcpguard.refresh.trigger", trigger)))
	return ctx
}

// RefreshEnd implements jwks.RefreshObserver: it counts the refresh,
// updates the key-set gauges and ends the span.
func (t *Telemetry) RefreshEnd(ctx context.Context, e jwks.RefreshEnd) {
	outcome, trigger := "success", "background"
	if e.Err != nil {
		outcome = "failure"
	}
	if e.OnDemand {
		trigger = "on_demand"
	}
	set := attribute.NewSet(attribute.String(attrIssuer, e.Issuer), attribute.String("mcpguard.refresh.outcome", outcome),
		attribute.String("mcpguard.refresh.cause", string(e.Cause)), attribute.String("mcpguard.refresh.trigger", trigger))
	opts := newOptions(set)
	t.refreshes.Add(ctx, 1, opts.add...)
	t.refreshDuration.Record(ctx, e.Duration.Seconds(), newOptions(attribute.NewSet(attribute.String(attrIssuer, e.Issuer),
		attribute.String("mcpguard.refresh.outcome", outcome))).rec...)
	t.mu.Lock()
	t.issuers[e.Issuer] = keySetState{keys: e.Keys, lastSuccess: e.LastSuccess}
	t.mu.Unlock()
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attribute.String("mcpguard.refresh.outcome", outcome), attribute.Int("mcpguard.jwks.keys", e.Keys))
	if e.Err != nil {
		span.SetAttributes(attribute.String("mcpguard.refresh.cause", string(e.Cause)))
		span.SetStatus(codes.Error, string(e.Cause))
	}
	span.End()
}

// refreshChain calls two observers in turn.
type refreshChain struct{ a, b jwks.RefreshObserver }

func (c refreshChain) RefreshStart(ctx context.Context, e jwks.RefreshStart) context.Context {
	return c.b.RefreshStart(c.a.RefreshStart(ctx, e), e)
}

func (c refreshChain) RefreshEnd(ctx context.Context, e jwks.RefreshEnd) {
	c.a.RefreshEnd(ctx, e)
	c.b.RefreshEnd(ctx, e)
}

// CallStart implements introspect.CallObserver: it starts the span
// "mcpguard.introspect", a child of the request's decision span.
func (t *Telemetry) CallStart(ctx context.Context, e introspect.CallStart) context.Context {
	ctx, _ = t.tracer.Start(ctx, "mcpguard.introspect", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String(attrIssuer, e.Issuer)))
	return ctx
}

// CallEnd implements introspect.CallObserver.
func (t *Telemetry) CallEnd(ctx context.Context, e introspect.CallEnd) {
	opts := newOptions(attribute.NewSet(attribute.String(attrIssuer, e.Issuer), attribute.String("mcpguard.introspection.outcome", string(e.Outcome))))
	t.introCalls.Add(ctx, 1, opts.add...)
	t.introDuration.Record(ctx, e.Duration.Seconds(), opts.rec...)
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attribute.String("mcpguard.introspection.outcome", string(e.Outcome)))
	if e.Outcome == "unavailable" || e.Outcome == "client_auth" {
		span.SetStatus(codes.Error, string(e.Outcome))
	}
	span.End()
}
