package redisstore

import "errors"

// Sentinel errors; the text is part of the API.
var (
	// ErrConfig: a constructor was given an unusable Config.
	ErrConfig = errors.New("redisstore: invalid config")
	// ErrUnavailable: Redis did not answer (connection, timeout, server
	// error). The error also wraps go-redis's error.
	ErrUnavailable = errors.New("redisstore: redis unavailable")
)

// errCorrupt: a stored value is not what this package writes.
var errCorrupt = errors.New("redisstore: corrupt value")
