package otelguard

import (
	"context"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/middleware"
)

// Attribute keys.
const (
	attrOutcome   = "mcpguard.decision.outcome"
	attrReason    = "mcpguard.decision.reason"
	attrStatus    = "http.response.status_code"
	attrMethod    = "mcp.method.name"
	attrOperation = "mcpguard.operation.name"
	attrVersion   = "mcp.protocol.version"
	attrIssuer    = "mcpguard.issuer"
	// Spans and span events only, never metric labels.
	attrClient  = "mcpguard.client_id"
	attrUser    = "user.id"
	attrTenant  = "mcpguard.tenant"
	attrSession = "mcp.session.id"
	attrArgs    = "mcpguard.arguments.sha256"
	attrRule    = "mcpguard.rule.name"
	attrHidden  = "mcpguard.list.hidden"
	attrHiddenN = "mcpguard.list.hidden_count"
)

// eventName is the span event of a decision reported without a decision
// span (a request not served through [Telemetry.Handler]), added to the
// recording span of the request's context.
const eventName = "mcpguard.decision"

type decisionKey struct {
	status                        int
	reason                        middleware.Reason
	method, name, protocolVersion string
}

type stepUpKey struct{ method, name string }

// decisionSpan is the span Handler started, ended by the first decision.
type decisionSpan struct {
	span  trace.Span
	ended atomic.Bool
}

type decisionSpanKey struct{}

// onDecision records d: [Telemetry.Instrument] sets it as
// middleware.Config.OnDecision. When the request went through
// [Telemetry.Handler], it also completes and ends the decision span. A
// known label set records without allocating.
func (t *Telemetry) onDecision(ctx context.Context, d middleware.Decision) {
	k := decisionKey{d.Status, d.Reason, d.Method, d.Name, d.ProtocolVersion}
	opts := t.decisionOpts.get(k, func() attribute.Set { return decisionSet(k) })
	t.decisions.Add(ctx, 1, opts.add...)
	switch d.Reason {
	case "insufficient_scope":
		t.challenges.Add(ctx, 1, t.stepUpOptions(d).add...)
	case "step_up_exhausted":
		t.exhausted.Add(ctx, 1, t.stepUpOptions(d).add...)
	}
	ds, ok := ctx.Value(decisionSpanKey{}).(*decisionSpan)
	if !ok {
		// No decision span: the decision is an event on the request's
		// span, if one records (otelhttp's, for instance).
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.AddEvent(eventName, trace.WithAttributes(eventAttrs(k, d)...))
		}
		return
	}
	if !ds.ended.CompareAndSwap(false, true) {
		// A later decision of the request (a list answer's entries left
		// out, a refusal by RequireScopes after Handler passed it): a
		// span of its own under the ended decision span.
		_, span := t.tracer.Start(ctx, eventName, spanStartOptions...)
		span.SetAttributes(eventAttrs(k, d)...)
		span.End()
		return
	}
	span := ds.span
	span.SetAttributes(eventAttrs(k, d)...)
	if d.Status >= 500 {
		span.SetStatus(codes.Error, string(d.Reason))
	}
	span.End()
}

// eventAttrs are the attributes of the decision event d (labels k):
// the labels, then who, in which session, with which arguments' digest,
// decided by which rule (docs/operations.md, "Decision events"). Empty
// values are left out.
func eventAttrs(k decisionKey, d middleware.Decision) []attribute.KeyValue {
	kv := decisionAttrs(k)
	str := func(key, v string) {
		if v != "" {
			kv = append(kv, attribute.String(key, v))
		}
	}
	if p := d.Principal; p != nil {
		str(attrIssuer, p.Issuer)
		str(attrUser, p.Subject)
		str(attrClient, p.ClientID)
		str(attrTenant, p.Tenant)
	}
	str(attrSession, d.Session)
	str(attrArgs, d.ArgumentsSHA256)
	str(attrRule, d.Rule)
	if len(d.Hidden) > 0 {
		kv = append(kv, attribute.StringSlice(attrHidden, d.Hidden), attribute.Int(attrHiddenN, len(d.Hidden)))
	}
	return kv
}

func (t *Telemetry) stepUpOptions(d middleware.Decision) options {
	k := stepUpKey{d.Method, d.Name}
	return t.stepUpOpts.get(k, func() attribute.Set {
		return attribute.NewSet(attribute.String(attrMethod, k.method), attribute.String(attrOperation, k.name))
	})
}

func decisionAttrs(k decisionKey) []attribute.KeyValue {
	outcome := "authorized"
	switch {
	case k.status != 0:
		outcome = "refused"
	case k.reason == "list_filtered":
		outcome = "filtered"
	}
	kv := []attribute.KeyValue{
		attribute.String(attrOutcome, outcome),
		attribute.String(attrReason, string(k.reason)),
	}
	if k.status != 0 {
		kv = append(kv, attribute.Int(attrStatus, k.status))
	}
	if k.method != "" {
		kv = append(kv, attribute.String(attrMethod, k.method))
	}
	if k.name != "" {
		kv = append(kv, attribute.String(attrOperation, k.name))
	}
	if k.protocolVersion != "" {
		kv = append(kv, attribute.String(attrVersion, k.protocolVersion))
	}
	return kv
}

func decisionSet(k decisionKey) attribute.Set { return attribute.NewSet(decisionAttrs(k)...) }

// Handler returns next (the Guard's or the middleware's handler) inside
// the span "mcpguard.authorize": a child of the span in the request's
// context or, without one, of the trace context the request carries
// (Config.Propagator). The decision hook [Telemetry.Instrument] sets ends it with the
// decision's attributes; if no decision is reported (next is not the
// middleware), it ends when next returns.
func (t *Telemetry) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if !trace.SpanContextFromContext(ctx).IsValid() {
			ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
		}
		ctx, span := t.tracer.Start(ctx, "mcpguard.authorize", spanStartOptions...)
		if !span.IsRecording() { // not sampled: only the trace context travels on
			next.ServeHTTP(w, r.WithContext(ctx))
			span.End()
			return
		}
		span.SetAttributes(attribute.String("http.request.method", r.Method))
		ds := &decisionSpan{span: span}
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, decisionSpanKey{}, ds)))
		if ds.ended.CompareAndSwap(false, true) {
			span.End()
		}
	})
}

var spanStartOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// Mount is [mcpguard.Guard.Mount] with the MCP route inside
// [Telemetry.Handler]: the metadata routes unchanged, the protected
// endpoint traced.
func (t *Telemetry) Mount(mux mcpguard.Mux, g *mcpguard.Guard, mcp http.Handler) {
	rs := g.Routes(mcp)
	for i, rt := range rs {
		h := rt.Handler
		if i == len(rs)-1 { // Routes puts the protected endpoint last
			h = t.Handler(h)
		}
		mux.Handle(rt.Pattern, h)
	}
}

// Instrument sets the hooks of cfg that a Guard passes down: the
// middleware's OnDecision, the validator's Observer and the Observer of
// the key sources the Guard creates, each chained after a hook cfg
// already has. Key sources and introspectors the caller builds (in
// cfg.Keys) take the Telemetry as their Observer themselves.
func (t *Telemetry) Instrument(cfg *mcpguard.Config) {
	if prev := cfg.Middleware.OnDecision; prev != nil {
		cfg.Middleware.OnDecision = func(ctx context.Context, d middleware.Decision) {
			prev(ctx, d)
			t.onDecision(ctx, d)
		}
	} else {
		cfg.Middleware.OnDecision = t.onDecision
	}
	if prev := cfg.Validate.Observer; prev != nil {
		cfg.Validate.Observer = chainValidation(prev, t.observeValidation)
	} else {
		cfg.Validate.Observer = t.observeValidation
	}
	if prev := cfg.JWKS.Observer; prev != nil {
		cfg.JWKS.Observer = refreshChain{prev, t}
	} else {
		cfg.JWKS.Observer = t
	}
}
