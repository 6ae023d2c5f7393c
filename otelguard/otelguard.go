package otelguard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// scopeName is the instrumentation scope of the meter and the tracer:
// the package path.
const scopeName = "github.com/mcpguard/mcpguard/otelguard"

// Config configures [New]. The zero value uses OpenTelemetry's global
// providers and propagator, which do nothing until the application
// installs its own (otel.SetMeterProvider, …).
type Config struct {
	// MeterProvider creates the meter. Nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// TracerProvider creates the tracer. Nil means
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// Propagator extracts the incoming trace context in
	// [Telemetry.Handler] when the request's context has no span. Nil
	// means otel.GetTextMapPropagator().
	Propagator propagation.TextMapPropagator
	// Now is the clock of the key-set age gauge; it must be the clock of
	// the key sources (jwks.Config.Now). Nil means time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.MeterProvider == nil {
		c.MeterProvider = otel.GetMeterProvider()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
	if c.Propagator == nil {
		c.Propagator = otel.GetTextMapPropagator()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Telemetry implements the observer hooks of the mcpguard packages. Create
// it with [New]; it is safe for concurrent use, and one Telemetry may
// observe several Guards.
type Telemetry struct {
	now    func() time.Time
	tracer trace.Tracer
	prop   propagation.TextMapPropagator

	decisions, challenges, exhausted metric.Int64Counter
	validation                       metric.Float64Histogram
	cacheLookups                     metric.Int64Counter
	refreshes                        metric.Int64Counter
	refreshDuration                  metric.Float64Histogram
	introCalls                       metric.Int64Counter
	introDuration                    metric.Float64Histogram

	decisionOpts optionCache[decisionKey]
	stepUpOpts   optionCache[stepUpKey]
	valOpts      optionCache[validationKey]
	hit, miss    options

	mu      sync.Mutex
	issuers map[string]keySetState // from refresh ends; bounded by configured issuers
}

// keySetState is what the gauges report for one issuer.
type keySetState struct {
	keys        int
	lastSuccess time.Time
}

// New creates the instruments. It fails only when the meter provider
// refuses to create one; the error says which.
func New(cfg Config) (*Telemetry, error) {
	cfg = cfg.withDefaults()
	m := cfg.MeterProvider.Meter(scopeName)
	t := &Telemetry{
		now:     cfg.Now,
		tracer:  cfg.TracerProvider.Tracer(scopeName),
		prop:    cfg.Propagator,
		issuers: map[string]keySetState{},
	}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10))
		errs = append(errs, err)
		return h
	}
	t.decisions = counter("mcpguard.decisions", "{decision}", "Authorization decisions of the middleware, by outcome and reason.")
	t.challenges = counter("mcpguard.stepup.challenges", "{challenge}", "403 insufficient_scope answers with a step-up challenge.")
	t.exhausted = counter("mcpguard.stepup.exhausted", "{answer}", "Terminal 403 answers past the step-up bound.")
	t.validation = histogram("mcpguard.validation.duration", "Duration of token validation.")
	t.cacheLookups = counter("mcpguard.token_cache.lookups", "{lookup}", "Verified-token cache lookups, by result.")
	t.refreshes = counter("mcpguard.jwks.refreshes", "{refresh}", "Key set refreshes, by issuer and outcome.")
	t.refreshDuration = histogram("mcpguard.jwks.refresh.duration", "Duration of key set refreshes.")
	t.introCalls = counter("mcpguard.introspection.calls", "{call}", "Calls to the introspection endpoint, by outcome.")
	t.introDuration = histogram("mcpguard.introspection.duration", "Duration of introspection calls.")
	keys, err := m.Int64ObservableGauge("mcpguard.jwks.keys", metric.WithUnit("{key}"), metric.WithDescription("Usable keys served, per issuer."))
	errs = append(errs, err)
	age, err := m.Float64ObservableGauge("mcpguard.jwks.age", metric.WithUnit("s"), metric.WithDescription("Age of the served key set, per issuer."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("otelguard: create instruments: %w", err)
	}
	if _, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		t.observeKeySets(o, keys, age)
		return nil
	}, keys, age); err != nil {
		return nil, fmt.Errorf("otelguard: register the key-set gauges: %w", err)
	}
	t.hit = newOptions(attribute.NewSet(attribute.String("mcpguard.token_cache.result", "hit")))
	t.miss = newOptions(attribute.NewSet(attribute.String("mcpguard.token_cache.result", "miss")))
	return t, nil
}

// observeKeySets reports the key count and age of every issuer seen.
func (t *Telemetry) observeKeySets(o metric.Observer, keys metric.Int64ObservableGauge, age metric.Float64ObservableGauge) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for iss, st := range t.issuers {
		attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("mcpguard.issuer", iss)))
		o.ObserveInt64(keys, int64(st.keys), attrs)
		if !st.lastSuccess.IsZero() {
			o.ObserveFloat64(age, max(now.Sub(st.lastSuccess).Seconds(), 0), attrs)
		}
	}
}

// maxCachedOptions bounds each option cache. The label sets are bounded
// by the configuration; this is a backstop.
const maxCachedOptions = 4096

// options are the precomputed measurement options of one attribute set.
type options struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

func newOptions(set attribute.Set) options {
	o := metric.WithAttributeSet(set)
	return options{add: []metric.AddOption{o}, rec: []metric.RecordOption{o}}
}

// optionCache maps a comparable label key to its precomputed options, so
// that recording a known label set allocates nothing.
type optionCache[K comparable] struct {
	mu sync.RWMutex
	m  map[K]options
}

func (c *optionCache[K]) get(k K, build func() attribute.Set) options {
	c.mu.RLock()
	opts, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return opts
	}
	opts = newOptions(build())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[K]options{}
	}
	if len(c.m) < maxCachedOptions {
		c.m[k] = opts
	}
	return opts
}
