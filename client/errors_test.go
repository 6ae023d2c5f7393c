package client

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mcpguard/mcpguard/challenge"
)

func TestErrorIsByReason(t *testing.T) {
	cause := errors.New("cause")
	tests := []struct {
		name     string
		err      error
		reason   string
		wantText string
	}{
		{"config", fmt.Errorf("%w: Resource is required", errInvalidConfig), "config", "client: invalid configuration: Resource is required"},
		{"step-up loop", challengeError(errStepUpLoop, 403, challenge.Challenge{Scope: []string{"x"}}, []string{"a"}), "step_up_loop", "client: step-up loop: challenge adds no new scope (status 403)"},
		{"retries", challengeError(errRetriesExhausted, 401, challenge.Challenge{}, nil), "retries_exhausted", "client: step-up retries exhausted (status 401)"},
		{"authorize with cause", fmt.Errorf("%w: %w", errAuthorize, cause), "authorize", "client: authorization failed: cause"},
		{"exchange response", &Error{Reason: "token_exchange", StatusCode: 400, Code: "invalid_target"}, "token_exchange", "client: token exchange failed: status 400"},
		{"metadata wrapping fetch", fmt.Errorf("%w: %w", errMetadata, fmt.Errorf("%w: %w", errMetadataFetch, cause)), "metadata", "client: protected resource metadata unavailable: client: fetching protected resource metadata failed: cause"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, &Error{Reason: tt.reason}) {
				t.Errorf("errors.Is(%v, reason %q) = false", tt.err, tt.reason)
			}
			if errors.Is(tt.err, &Error{Reason: "dpop"}) {
				t.Errorf("errors.Is(%v, reason dpop) = true", tt.err)
			}
			if errors.Is(tt.err, errors.New(tt.wantText)) {
				t.Errorf("matches a plain error of the same text")
			}
			if got := tt.err.Error(); got != tt.wantText {
				t.Errorf("Error() = %q, want %q", got, tt.wantText)
			}
			var e *Error
			if !errors.As(tt.err, &e) || e.Reason != tt.reason {
				t.Errorf("errors.As reason = %+v, want %q", e, tt.reason)
			}
		})
	}
	inner := fmt.Errorf("%w: %w", errMetadata, fmt.Errorf("%w: x", errMetadataFetch))
	if !errors.Is(inner, &Error{Reason: "metadata_fetch"}) {
		t.Error("a wrapped inner reason is not found")
	}
	if errors.Is(errAuthorize, (*Error)(nil)) {
		t.Error("matches a nil *Error")
	}
}
