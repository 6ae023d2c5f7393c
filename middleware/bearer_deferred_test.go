package middleware

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/validate"
)

// wrappedValidator hides the concrete *validate.Validator, so that the
// middleware checks b64token syntax before validating.
type wrappedValidator struct{ v TokenValidator }

func (w wrappedValidator) Validate(ctx context.Context, raw string) (*validate.Claims, error) {
	return w.v.Validate(ctx, raw)
}

// TestDeferredSyntaxCheckSameAnswers: with a validate.Validator the
// b64token check runs after validation; every answer is the same as with
// the check first.
func TestDeferredSyntaxCheckSameAnswers(t *testing.T) {
	f := newFixture(t, nil)
	slow := f.with(t, func(c *Config) { c.Validator = wrappedValidator{f.v} })
	good := f.token(t, "mcp")
	for _, auth := range []string{
		"Bearer " + good, "Bearer " + good + "=", "Bearer " + good + "==", "Bearer " + good + " x", "Bearer " + good + "\x00",
		"Bearer " + good[:10] + "é" + good[10:], "Bearer a,b", "Bearer ===", "Bearer abc", "Bearer " + strings.Repeat("A", 9000),
		"Bearer " + good[:20] + "*" + good[20:], "Bearer eyJ\tx", "Bearer  " + good, "bearer " + good,
	} {
		var answers []string
		for _, m := range []*Middleware{f.m, slow.m} {
			r := httptest.NewRequest(http.MethodGet, resource, nil)
			r.Header.Set("Authorization", auth)
			rec := httptest.NewRecorder()
			m.Handler(echoHandler()).ServeHTTP(rec, r)
			answers = append(answers, fmt.Sprintf("%d %s %s", rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body))
		}
		if answers[0] != answers[1] {
			t.Errorf("%.40q: deferred %s\nfirst %s", auth, answers[0], answers[1])
		}
	}
}
