package redisstore

import "errors"

// errConfig: a constructor was given an unusable Config, or a store a
// TTL or window under 1 ms. The text is part of the API.
var errConfig = errors.New("redisstore: invalid config")

// Sentinel errors; the text is part of the API.
var (
	// ErrUnavailable: Redis did not answer (connection, timeout, server
	// error). The error also wraps go-redis's error.
	ErrUnavailable = errors.New("redisstore: redis unavailable")
)

// errCorrupt: a stored value is not what this package writes.
var errCorrupt = errors.New("redisstore: corrupt value")
