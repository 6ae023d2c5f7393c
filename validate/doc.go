// Package validate verifies OAuth 2.0 JWT access tokens (RFC 9068) for a
// protected resource such as an MCP server, as the MCP authorization
// specification requires (OAuth 2.1 §5.2, RFC 8707 §2 audience binding).
//
// The happy path is three lines:
//
//	v, err := validate.New(validate.Config{
//		Issuers:   []validate.Issuer{{Issuer: "https://as.example.com", Keys: keys}},
//		Audiences: []string{"https://mcp.example.com/mcp"},
//	})
//	claims, err := v.Validate(ctx, bearerToken)
//	ok := claims.HasScope("tools:call")
//
// Keys is a [KeySource]: [StaticKeys] for pinned keys, or the validate/jwks
// package for a remote JWKS with refresh. This package does no I/O itself
// and imports no net/http.
//
// # What is checked
//
// A token must be a JWS in compact serialization with strictly canonical
// base64url segments, signed with an asymmetric algorithm from the
// allow-list (never "none" or HMAC), typed "at+jwt" (RFC 9068 §2.1), with a
// "kid" naming a usable key of the issuer its "iss" names. Headers that
// would make the token choose its own key or change how it is processed
// ("jku", "x5u", "jwk", "x5c", "crit", "b64", "cty") are refused, never
// fetched. The claims "iss", "aud", "exp", "sub", "iat", "client_id" and
// "jti" are required; each of the last four has a named Allow… relaxation
// in [Config], the first three none. No zero value in [Config] disables a
// check.
//
// Every error returned by [Validator.Validate] wraps one sentinel from
// errors.go, for [errors.Is], and never contains a value read from the
// token.
//
// # Implementation notes
//
// Signature verification calls crypto/ecdsa, crypto/rsa and crypto/ed25519
// directly, and only the claims this package checks are decoded, by a
// small top-level JSON scanner. go-jose provides the key type
// ([github.com/go-jose/go-jose/v4.JSONWebKey]) and algorithm names; its
// jwt.ParseSigned and Claims path was measured at 20-40% on top of the
// signature check itself, which is most of what validation should cost.
// The tests cross-check the tokens this package accepts (seed corpus and
// fuzzer) against go-jose's jwt.ParseSigned and Claims.
package validate
