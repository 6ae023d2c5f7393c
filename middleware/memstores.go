package middleware

import "time"

// NewMemoryStepUpStore returns the in-process [StepUpStore] that a Config
// whose StepUpStore is nil gets (bounded, shared fairly between clients and
// their principals), for sharing one store between several Middleware: the
// routes of a proxy whose configuration is reloaded keep their step-up
// counters.
func NewMemoryStepUpStore() StepUpStore { return newMemoryStepUpStore(0) }

// NewMemoryOwnerStore returns the in-process [OwnerStore] that keeps a
// Middleware's task owners when SessionConfig.Store is nil (bounded, with
// per-owner quotas), for sharing one store between several Middleware as
// SessionConfig.Store: sessions bound by one are served by the next, as
// between replicas sharing Redis. now is the clock of the expiries; nil
// means time.Now.
func NewMemoryOwnerStore(now func() time.Time) OwnerStore {
	return newMemoryOwnerStore(memoryOwnerConfig{Now: now})
}
