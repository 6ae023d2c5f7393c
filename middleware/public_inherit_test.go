package middleware

import (
	"errors"
	"strings"
	"testing"
)

// TestPublicMethodsThatInheritRules: New refuses a public method that
// reaches what per-name rules protect, since it would skip them for
// everyone, with an error naming the fix. Before, completion/complete,
// resources/subscribe, subscriptions/listen and tasks/* were accepted.
func TestPublicMethodsThatInheritRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for _, method := range []string{"completion/complete", "resources/subscribe", "subscriptions/listen", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/future"} {
		cfg := f.cfg
		cfg.Operations.Public = PublicOperations{Methods: []string{"ping", method}}
		_, err := New(cfg)
		if !errors.Is(err, errConfig) {
			t.Errorf("%s: New = %v, want errConfig", method, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "cannot make "+method+" public") || !strings.Contains(msg, "remove it from Public.Methods") {
			t.Errorf("%s: error %q does not name the method and the fix", method, msg)
		}
	}
	for _, method := range []string{"ping", "initialize", "server/discover", "resources/unsubscribe", "notifications/tasks/status"} {
		cfg := f.cfg
		cfg.Operations.Public = PublicOperations{Methods: []string{method}}
		if _, err := New(cfg); err != nil {
			t.Errorf("%s: New = %v, want nil", method, err)
		}
	}
}
