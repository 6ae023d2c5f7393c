// Package cimd gives an OAuth 2.1 authorization server in front of MCP
// servers its client identities: OAuth Client ID Metadata Documents
// (draft-ietf-oauth-client-id-metadata-document-00, which MCP 2025-11-25
// and 2026-07-28 say authorization servers SHOULD support), pre-registered
// clients, and legacy RFC 7591 dynamic registration (deprecated by MCP
// 2026-07-28).
//
// The happy path at an authorization endpoint:
//
//	res, _ := cimd.NewResolver(cimd.ResolverConfig{})
//	reg, _ := cimd.NewRegistry(cimd.RegistryConfig{Resolver: res})
//	c, err := reg.Lookup(ctx, r.FormValue("client_id")) // fetches https client_ids
//	if err != nil || !c.RedirectURIAllowed(r.FormValue("redirect_uri")) { /* show invalid_client, do not redirect */ }
//
// A [Resolver] fetches a client_id URL only after checking its shape
// ([isClientIDURL]), through a client whose dialer refuses non-public
// addresses (after DNS resolution, so DNS rebinding cannot slip through),
// with no redirects, no proxies, 200 and JSON only, a 5 KiB cap applied
// after decompression, a 5 s deadline including the body, a concurrency
// cap, single-flight per URL and global and per-host rate limits. It
// validates the document (exact client_id, required members, redirect
// URI rules, no shared secrets, no duplicate members) and caches it within
// Cache-Control bounds. URLs inside the document are never fetched.
//
// Errors are an [*Error] with a precise Reason for logs and metrics; answer
// every one of them with one fixed external answer, "invalid_client", so
// that the resolver cannot be used as an oracle for scanning internal
// hosts.
//
// [ServerMetadata] produces matching RFC 8414 metadata. See docs/registration.md
// for the configuration reference and the security guarantees.
package cimd
