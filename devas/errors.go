package devas

import "errors"

// Sentinel errors returned by [New] and [Server.IssueToken]. Errors from
// the HTTP endpoints are never returned to Go callers: they become OAuth
// error responses (RFC 6749 §4.1.2.1, §5.2) and log records. The text is
// part of the API.
var (
	// ErrConfig: the Config passed to [New] is invalid.
	ErrConfig = errors.New("devas: invalid config")
	// ErrUnknownResource: a resource is not one of Config.Resources
	// (RFC 8707 §2 "invalid_target").
	ErrUnknownResource = errors.New("devas: unknown resource")
	// ErrInvalidArgument: an argument to [Server.IssueToken] is empty or
	// malformed.
	ErrInvalidArgument = errors.New("devas: invalid argument")
)
