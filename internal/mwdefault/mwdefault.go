// Package mwdefault holds the defaults that middleware.New applies to
// zero-valued middleware.Config fields, for the packages that state them
// (the proxy's -check description, tests). The Config field comments
// document the same values for users.
package mwdefault

import "time"

const (
	// MaxBodyBytes bounds the JSON-RPC body read when
	// Config.MaxBodyBytes is zero: 1 MiB.
	MaxBodyBytes = 1 << 20
	// StepUpLimit is the number of insufficient_scope challenges per
	// principal and scope set within the window when Config.StepUpLimit
	// is zero.
	StepUpLimit = 3
	// StepUpWindow is the step-up counting window when
	// Config.StepUpWindow is zero.
	StepUpWindow = 10 * time.Minute
)
