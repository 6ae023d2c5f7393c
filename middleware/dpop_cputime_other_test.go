//go:build !unix

package middleware

import "time"

func dpopCPUTime() time.Duration { return 0 }
