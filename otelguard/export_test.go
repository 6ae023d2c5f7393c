package otelguard

import (
	"context"

	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/validate"
)

// ScopeName is the instrumentation scope, for the tests.
const ScopeName = scopeName

// OnDecision is the decision hook Instrument sets, for the tests.
func (t *Telemetry) OnDecision(ctx context.Context, d middleware.Decision) { t.onDecision(ctx, d) }

// ObserveValidation is the validation hook Instrument sets, for the tests.
func (t *Telemetry) ObserveValidation(ctx context.Context, o validate.Observation) {
	t.observeValidation(ctx, o)
}
