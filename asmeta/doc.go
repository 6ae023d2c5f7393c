// Package asmeta holds OAuth 2.0 Authorization Server Metadata (RFC 8414)
// and its discovery, in the URL order the MCP authorization specification
// prescribes (RFC 8414 first, then OpenID Connect Discovery), with the
// issuer mix-up check of RFC 8414 §3.3.
//
//	md, err := asmeta.Discover(ctx, nil, "https://auth.example.com/tenant1")
//	if err != nil { … }         // errors.Is(err, asmeta.ErrIssuerMismatch), ErrNotFound, …
//	jwksURI := md.JWKSURI
//
// [WellKnownURLs] builds the candidate URLs (path insertion, RFC 8414 §3.1,
// then OIDC appending). [Discover] fetches them in order through the
// bounded fetcher in internal/fetch (256 KiB cap, JSON media type, status
// 200, timeout, no redirects by default) and returns the first document
// whose "issuer" is byte-identical to the issuer asked for. Documents naming
// another issuer are never used. [Metadata.Validate] checks a document
// against the REQUIRED members of RFC 8414 §2.
//
// The issuer identifier must be https; http is accepted only for loopback
// hosts (127.0.0.0/8, ::1, "localhost") so that local development and tests
// work without TLS.
package asmeta
