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
// allow-list (never "none" or HMAC; "Ed25519", RFC 9864, as well as
// "EdDSA"), typed "at+jwt" (RFC 9068 §2.1), with a "kid" naming a usable
// key of the issuer its "iss" names. Headers that would make the token
// choose its own key or change how it is processed ("jku", "x5u", "jwk",
// "x5c", "crit", "b64", "cty") are refused, never fetched. Header and
// claims set must be JSON objects in valid UTF-8 without repeated member
// names and without case variants of the names read. The claims "iss",
// "aud", "exp", "sub", "iat", "client_id" and "jti" are required; each of
// the last four has a named Allow… relaxation in [Config], the first three
// none. A token with "cnf" (sender-constrained, RFC 7800, RFC 9449) is
// refused with [Error] "sender_constrained" unless Config.AllowConfirmation is
// set by a caller that checks the proof of possession. No zero value in
// [Config] disables a check.
//
// Every error returned by [Validator.Validate] wraps one sentinel from
// errors.go, for [errors.Is], and never contains a value read from the
// token.
//
// # Implementation notes
//
// The JOSE boundary is jws.go, one short file with the RFC clauses it
// implements: the compact split, strict base64url and the header rules.
// JSON is read by internal/strictjson over github.com/go-json-experiment/json
// (Go 1.27's encoding/json/v2), and only the members this package checks
// are decoded. Keys are go-jose's ([github.com/go-jose/go-jose/v4.JSONWebKey],
// parsed and checked by go-jose), and signatures are verified by
// crypto/ecdsa, crypto/rsa and crypto/ed25519 directly: go-jose's
// jwt.ParseSigned and Claims path was measured at 20-40% on top of the
// signature check itself. The tests cross-check every token this package
// accepts (hostile suites, seed corpus and fuzzers) against go-jose's
// jwt.ParseSigned and Claims. docs/jose.md says what each library does.
package validate
