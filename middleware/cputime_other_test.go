//go:build !unix

package middleware

import "time"

// cpuTime is not available here; benchmarks then report wall time only.
func cpuTime() time.Duration { return 0 }
