package otelguard_test

import (
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

// TestDeps: otelguard links the OpenTelemetry API (never the SDK, which
// the application chooses) and the packages it observes; no core package
// links OpenTelemetry, so a program that does not import otelguard does
// not either.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct: true,
		Allowed: []string{
			deptest.Module, deptest.Module + "/middleware", deptest.Module + "/validate",
			deptest.Module + "/validate/jwks", deptest.Module + "/validate/introspect",
			"go.opentelemetry.io/otel", "go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes",
			"go.opentelemetry.io/otel/metric", "go.opentelemetry.io/otel/propagation", "go.opentelemetry.io/otel/trace",
		},
	}.Check(t, "github.com/mcpguard/mcpguard/otelguard")
	deptest.DepChecker{
		AllowUnlisted: true,
		BadDeps:       map[string]string{"go.opentelemetry.io/otel/sdk/...": "the SDK is the application's choice; tests only"},
	}.Check(t, "github.com/mcpguard/mcpguard/otelguard")
	for _, pkg := range []string{
		deptest.Module, deptest.Module + "/middleware", deptest.Module + "/validate/...", deptest.Module + "/cimd/...",
		deptest.Module + "/challenge", deptest.Module + "/prm", deptest.Module + "/redisstore",
	} {
		deptest.DepChecker{
			AllowUnlisted: true,
			BadDeps:       map[string]string{"go.opentelemetry.io/...": "only otelguard links OpenTelemetry"},
		}.Check(t, pkg)
	}
}
