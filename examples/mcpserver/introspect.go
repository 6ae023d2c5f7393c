package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/validate"
	"github.com/mcpguard/mcpguard/validate/introspect"
)

// tokenMode is how the example validates access tokens (-token-mode).
type tokenMode int

const (
	// modeJWT validates JWT access tokens locally (RFC 9068): the default,
	// and the only mode of the embedded development server.
	modeJWT tokenMode = iota
	// modeIntrospect asks the issuer's introspection endpoint (RFC 7662)
	// about every token (results are cached, see validate/introspect).
	modeIntrospect
	// modeHybrid validates JWTs of -issuer locally and introspects every
	// other token (introspect.Hybrid).
	modeHybrid
)

var tokenModeNames = [...]string{modeJWT: "jwt", modeIntrospect: "introspect", modeHybrid: "hybrid"}

func (m tokenMode) String() string {
	if int(m) < len(tokenModeNames) {
		return tokenModeNames[m]
	}
	return fmt.Sprintf("tokenMode(%d)", int(m))
}

// tokenModeFlag is the flag.Value of -token-mode.
type tokenModeFlag struct{ mode *tokenMode }

func (f tokenModeFlag) String() string {
	if f.mode == nil {
		return modeJWT.String()
	}
	return f.mode.String()
}

func (f tokenModeFlag) Set(s string) error {
	for m, name := range tokenModeNames {
		if s == name {
			*f.mode = tokenMode(m)
			return nil
		}
	}
	return errors.New("must be jwt, introspect or hybrid")
}

// Errors of the token-mode flags, reported before anything is bound.
var (
	errIntrospectionNeedsIssuer = errors.New("-token-mode introspect and hybrid need -issuer: the embedded development authorization server issues only JWTs and has no introspection endpoint")
	errIntrospectionClient      = errors.New("-token-mode introspect and hybrid need -introspection-client-id and -introspection-client-secret (or MCPGUARD_INTROSPECTION_CLIENT_SECRET): RFC 7662 §2.1 introspection endpoints authenticate the resource server")
	errIntrospectionFlagsUnused = errors.New("-introspection-endpoint, -introspection-client-id, -introspection-client-secret, -introspection-allow-missing-aud and -introspection-allow-missing-sub are used only with -token-mode introspect or hybrid")
)

// checkTokenMode checks the combination of -token-mode and the
// introspection flags.
func checkTokenMode(o options) error {
	if o.tokenMode == modeJWT {
		if o.introspectionEndpoint != "" || o.introspectionClientID != "" || o.introspectionClientSecret != "" ||
			o.introspectionAllowMissingAudience || o.introspectionAllowMissingSubject {
			return errIntrospectionFlagsUnused
		}
		return nil
	}
	if o.issuer == "" {
		return errIntrospectionNeedsIssuer
	}
	if o.introspectionClientID == "" || o.introspectionClientSecret == "" {
		return errIntrospectionClient
	}
	return nil
}

// newValidator returns the token validator of o.tokenMode. keys is nil in
// modeIntrospect, which needs no JWKS.
func newValidator(o options, issuer string, keys validate.KeySource, audiences []string, logger *slog.Logger) (middleware.TokenValidator, error) {
	var jwtValidator *validate.Validator
	if o.tokenMode != modeIntrospect {
		if o.allowJWTType || o.allowSCP || o.allowMissingJTI || o.allowMissingClientID {
			logger.Warn("token validation relaxed", "allow-jwt-typ", o.allowJWTType, "allow-scp", o.allowSCP,
				"allow-missing-jti", o.allowMissingJTI, "allow-missing-client-id", o.allowMissingClientID)
		}
		v, err := validate.New(validate.Config{
			Issuers:              []validate.Issuer{{Issuer: issuer, Keys: keys}},
			Audiences:            audiences,
			AllowJWTType:         o.allowJWTType,
			AllowSCP:             o.allowSCP,
			AllowMissingJTI:      o.allowMissingJTI,
			AllowMissingClientID: o.allowMissingClientID,
			Leeway:               o.leeway,
			TenantClaim:          o.tenantClaim,
			AllowConfirmation:    o.dpop != middleware.DPoPOff,
		})
		if err != nil {
			return nil, err
		}
		if o.tokenMode == modeJWT {
			return v, nil
		}
		jwtValidator = v
	}
	in, err := introspect.New(introspect.Config{
		Issuer:       issuer,
		Endpoint:     o.introspectionEndpoint,
		Audiences:    audiences,
		ClientID:     o.introspectionClientID,
		ClientSecret: o.introspectionClientSecret,
		Leeway:       o.leeway,
		TenantClaim:  o.tenantClaim,
		Logger:       logger.With("component", "introspect"),
		// DPoP-bound tokens carry cnf (RFC 9449 §6.2); the middleware checks the binding.
		AllowConfirmation: o.dpop != middleware.DPoPOff,

		AllowMissingAudience: o.introspectionAllowMissingAudience,
		AllowMissingSubject:  o.introspectionAllowMissingSubject,
	})
	if err != nil {
		return nil, fmt.Errorf("introspection: %w", err)
	}
	if jwtValidator == nil {
		return in, nil
	}
	return introspect.NewHybrid(jwtValidator, in)
}

// describeTokenMode is the welcome text's line on token validation.
func describeTokenMode(o options) string {
	ep := o.introspectionEndpoint
	if ep == "" {
		ep = "discovered from the issuer's metadata"
	}
	switch o.tokenMode {
	case modeIntrospect:
		return "every token is introspected (RFC 7662; endpoint " + ep + ")"
	case modeHybrid:
		return "JWTs of the issuer are validated locally, other tokens introspected (endpoint " + ep + ")"
	}
	return "JWT access tokens validated locally (RFC 9068)"
}
