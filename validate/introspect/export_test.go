package introspect

// FlightWaiters is the number of callers waiting on a single flight, for
// tests that must know every caller has joined it.
func FlightWaiters(i *Introspector) int64 { return i.waiting.Load() }
