package introspect_test

// SHIM test: dropped at merge with validate/confirmation_shim.go.

import (
	"errors"
	"testing"

	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

func TestConfirmationShim(t *testing.T) {
	body := activeJSON("cnf", map[string]string{"jkt": "abc"}, "token_type", "DPoP")
	s := newStub(t, jsonAnswer(body))
	if _, err := newIntro(t, introspect.Config{Endpoint: s.URL()}).Validate(t.Context(), testToken); !errors.Is(err, validate.ErrSenderConstrained) {
		t.Fatalf("default: err = %v, want ErrSenderConstrained", err)
	}
	c, err := newIntro(t, introspect.Config{Endpoint: s.URL(), AllowConfirmation: true}).Validate(t.Context(), testToken)
	if err != nil || c.Confirmation == nil || c.Confirmation.JKT != "abc" {
		t.Fatalf("allowed: %+v, %v", c, err)
	}
	s.set(jsonAnswer(activeJSON("token_type", "DPoP")))
	if _, err := newIntro(t, introspect.Config{Endpoint: s.URL(), AllowConfirmation: true, CacheSize: -1}).Validate(t.Context(), testToken); !errors.Is(err, validate.ErrType) {
		t.Fatalf("token_type DPoP without cnf: err = %v, want ErrType", err)
	}
}
