package introspect

import (
	"context"
	"fmt"

	"github.com/mcpguard/mcpguard/validate"
)

// Hybrid validates JWT access tokens of trusted issuers locally and every
// other token by introspection. It satisfies middleware.TokenValidator.
// Create it with [NewHybrid].
//
// The route is chosen by [validate.Validator.Trusts]: a token that is a
// compact JWS whose unverified "iss" is one of the JWT validator's issuers
// is validated by [validate.Validator.Validate] and by nothing else. If
// that fails (bad signature, expired, wrong audience, …) the token is
// refused; it is never sent to the introspection endpoint as a second
// chance. A fallback would let whoever presents the token choose the
// validation path: a forged or expired JWT naming the trusted issuer would
// be handed to an authorization server that might be more lenient (or, as
// [Introspector] assumes for a response without "iss", answer about a
// token it considers its own), and every such token would cost an
// outbound request, turning junk tokens into load on the authorization
// server. Opaque tokens, and JWTs naming any other issuer, go to
// introspection, which must then vouch for them itself.
type Hybrid struct {
	jwt   *validate.Validator
	intro *Introspector
}

// NewHybrid returns a [Hybrid] that routes to jwt and intro. Both are
// required; the error wraps [ErrConfig].
func NewHybrid(jwt *validate.Validator, intro *Introspector) (*Hybrid, error) {
	if jwt == nil || intro == nil {
		return nil, fmt.Errorf("%w: hybrid needs both a JWT validator and an introspector", ErrConfig)
	}
	return &Hybrid{jwt: jwt, intro: intro}, nil
}

// Validate validates raw locally if [validate.Validator.Trusts] it, and
// by introspection otherwise. Errors are those of the chosen validator.
func (h *Hybrid) Validate(ctx context.Context, raw string) (*validate.Claims, error) {
	if h.jwt.Trusts(raw) {
		return h.jwt.Validate(ctx, raw)
	}
	return h.intro.Validate(ctx, raw)
}
