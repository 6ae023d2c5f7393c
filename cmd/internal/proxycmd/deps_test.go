package proxycmd

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: the subcommand is flag parsing around the proxy engine, with
// the development authorization server for a local trial and
// OpenTelemetry (otelguard, the SDK and its OTLP/HTTP exporters; the proxy
// package itself links no OpenTelemetry).
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct: true,
		Allowed: []string{
			deptest.Module + "/proxy", deptest.Module + "/devas", deptest.Module + "/otelguard", deptest.Module + "/internal/devmint",
			deptest.Module + "/middleware", deptest.Module + "/validate/dpop", // the stores shared across reloads
			"go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/propagation",
			"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp", "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp",
			"go.opentelemetry.io/otel/exporters/prometheus", "github.com/prometheus/client_golang/prometheus", "github.com/prometheus/client_golang/prometheus/promhttp",
			"go.opentelemetry.io/otel/sdk/metric", "go.opentelemetry.io/otel/sdk/resource", "go.opentelemetry.io/otel/sdk/trace",
		},
	}.Check(t, ".")
}
