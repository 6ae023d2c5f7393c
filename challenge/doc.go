// Package challenge builds, writes and parses HTTP authentication challenges
// (the WWW-Authenticate header) for OAuth 2.0 bearer-token resource servers:
// RFC 6750 §3 error codes and parameters, plus the RFC 9728 §5.1
// resource_metadata parameter that MCP clients use to discover the
// protected-resource metadata.
//
// A resource server answers a request without a usable token like this:
//
//	challenge.Write(w, challenge.Challenge{
//		Error:            challenge.InvalidToken,
//		Scope:            []string{"files:read"},
//		ResourceMetadata: "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
//	})
//
// and asks for more scopes (step-up, RFC 6750 §3.1 insufficient_scope) with
//
//	challenge.Write(w, challenge.StepUp(metadataURL, "files:write"))
//
// A client reads challenges with [ParseAll] applied to
// resp.Header.Values("WWW-Authenticate").
//
// # Rendering rules
//
// [Challenge.String] is deterministic. After the scheme it renders, in this
// order and separated by ", ": realm, error, scope, resource_metadata,
// error_description, then extension parameters sorted by name. Every value
// is an RFC 9110 §5.6.4 quoted-string. Values that could break the header
// are never rendered, so header injection (CR, LF, NUL) is impossible by
// construction:
//
//   - error_description must match the RFC 6750 §3 charset
//     (%x20-21 / %x23-5B / %x5D-7E); otherwise the standard text for the
//     error code is sent instead (or nothing, for an unknown code). It is
//     only sent together with an error code (RFC 6750 §3.1).
//   - scope tokens must match the RFC 6750 §3 scope-token charset
//     (%x21 / %x23-5B / %x5D-7E); other tokens are dropped, duplicates are
//     dropped, and "offline_access" is always dropped (MCP 2026-07-28: a
//     server SHOULD NOT advertise it in a challenge).
//   - realm, resource_metadata and extension values must consist of
//     visible ASCII, space and tab; otherwise the parameter is dropped.
//   - an error code outside the RFC 6750 charset is sent as invalid_token.
//
// Parsing is liberal (RFC 9110 §11.6.1 syntax, any scheme) and reports
// values as received; only rendering applies the rules above.
package challenge
