package proxycmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpguard/mcpguard/otelguard"
	"github.com/mcpguard/mcpguard/proxy"
)

// metricInterval is how often metrics are exported.
const metricInterval = 30 * time.Second

// telemetry is OpenTelemetry for the proxy: otelguard's decision,
// validation, key and introspection metrics and traces, exported over
// OTLP/HTTP (protobuf) to one collector.
type telemetry struct {
	t      *otelguard.Telemetry
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	config func(*proxy.Config)
}

// startTelemetry exports to the OTLP/HTTP collector at endpoint (its base
// URL: traces go to endpoint/v1/traces, metrics to endpoint/v1/metrics,
// as OTEL_EXPORTER_OTLP_ENDPOINT defines them; empty: no OTLP), and, with
// reg, serves the metrics for Prometheus to scrape through reg
// (OpenTelemetry's Prometheus exporter). headers are sent with every
// export ("k=v,k2=v2", OTEL_EXPORTER_OTLP_HEADERS).
func startTelemetry(ctx context.Context, endpoint, headers, service string, reg *prometheus.Registry) (*telemetry, error) {
	res := resource.NewSchemaless(attribute.String("service.name", service))
	var tpOpts []sdktrace.TracerProviderOption
	var mpOpts []sdkmetric.Option
	var te sdktrace.SpanExporter
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("-otlp-endpoint %q: want the collector's http or https base URL, e.g. http://127.0.0.1:4318", endpoint)
		}
		base := strings.TrimSuffix(endpoint, "/")
		hdr := map[string]string{}
		for _, kv := range strings.Split(headers, ",") {
			if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k != "" {
				hdr[k] = v
			}
		}
		te, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(base+"/v1/traces"), otlptracehttp.WithHeaders(hdr))
		if err != nil {
			return nil, fmt.Errorf("OpenTelemetry trace exporter: %w", err)
		}
		me, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(base+"/v1/metrics"), otlpmetrichttp.WithHeaders(hdr))
		if err != nil {
			_ = te.Shutdown(ctx)
			return nil, fmt.Errorf("OpenTelemetry metric exporter: %w", err)
		}
		tpOpts = append(tpOpts, sdktrace.WithBatcher(te))
		mpOpts = append(mpOpts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me, sdkmetric.WithInterval(metricInterval))))
	}
	if reg != nil {
		pe, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			if te != nil {
				_ = te.Shutdown(ctx)
			}
			return nil, fmt.Errorf("OpenTelemetry Prometheus exporter: %w", err)
		}
		mpOpts = append(mpOpts, sdkmetric.WithReader(pe))
	}
	tp := sdktrace.NewTracerProvider(append(tpOpts, sdktrace.WithResource(res))...)
	mp := sdkmetric.NewMeterProvider(append(mpOpts, sdkmetric.WithResource(res))...)
	t, err := otelguard.New(otelguard.Config{TracerProvider: tp, MeterProvider: mp, Propagator: propagation.TraceContext{}})
	if err != nil {
		_ = tp.Shutdown(ctx)
		_ = mp.Shutdown(ctx)
		return nil, err
	}
	tel := &telemetry{t: t, tp: tp, mp: mp}
	tel.config = func(c *proxy.Config) {
		c.Instrument = t.Instrument
		c.KeysObserver = t
		c.IntrospectionObserver = t
	}
	return tel, nil
}

// metricsHandler serves reg in the Prometheus exposition formats.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{MaxRequestsInFlight: 4, Timeout: 10 * time.Second})
}

// handler traces every request of h ("mcpguard.authorize" spans, children
// of the caller's W3C trace context).
func (tel *telemetry) handler(h http.Handler) http.Handler { return tel.t.Handler(h) }

// shutdown flushes and stops the exporters.
func (tel *telemetry) shutdown(ctx context.Context) error {
	return errors.Join(tel.tp.Shutdown(ctx), tel.mp.Shutdown(ctx))
}
