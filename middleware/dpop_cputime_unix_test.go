//go:build unix

package middleware

import (
	"syscall"
	"time"
)

// dpopCPUTime returns the user plus system CPU time of this process, so
// that BenchmarkDPoP can report cpu-ns/op, steadier than sec/op on a
// loaded machine.
func dpopCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
