// Package client is the client side of MCP authorization: an
// http.RoundTripper, built on golang.org/x/oauth2, that sends the bearer
// token to one MCP server and performs step-up authorization when the
// server asks for it, plus helpers for MCP servers that call upstream APIs
// with their own tokens.
//
// The happy path, for an MCP client or gateway:
//
//	tr, err := client.New(client.Config{
//		Resource:   "https://mcp.example.com/mcp",
//		Authorizer: myAuthorizer, // opens a browser, runs the code flow
//	})
//	httpClient := &http.Client{Transport: tr} // e.g. for the go-sdk StreamableClientTransport
//
// # Token scoping
//
// The token is attached only to requests whose URL has the origin of
// Config.Resource: same scheme, host (case-insensitive) and port (default
// ports normalized). Other requests, including redirects to another
// origin, pass through without it. A caller's own Authorization header on
// such a request is left alone.
//
// # Challenges
//
// On a 401 or 403 the transport parses every WWW-Authenticate field with
// challenge.ParseAll. A malformed header, or one without a Bearer
// challenge, leaves the response as it is. With several Bearer challenges
// the first one wins. It acts on:
//
//   - 401 with no error code or error="invalid_token" (RFC 6750 §3.1):
//     re-authorize for granted ∪ challenged scopes; the challenged scopes
//     are the challenge's scope, or else the metadata's scopes_supported
//     (MCP §Scope Selection Strategy).
//   - 403 with error="insufficient_scope": step-up for
//     requested ∪ granted ∪ challenged (MCP 2026-07-28 §Step-Up
//     Authorization Flow, SEP-2350; in stable order).
//
// Every other 401 or 403 (other error codes, other schemes) is returned as
// is. "offline_access" is never taken from a server's scope list; only the
// [Authorizer] may add it.
//
// # Metadata
//
// The RFC 9728 protected-resource metadata comes from the challenge's
// resource_metadata URL or, if there is none, from the path-inserted and
// then the root well-known URL (MCP discovery order). MCP requires clients
// to use the resource_metadata URL when present, and RFC 9728 §5.1 allows
// it on any origin, so the transport uses it; one on another origin than
// [Config.Resource] is fetched through an SSRF-guarded client
// ([Config.CrossOriginHTTPClient], by default asmeta.NewGuardedClient:
// public addresses on port 443 only, no redirects), because the server
// being authorized chose it. [Config.DenyCrossOriginMetadata] refuses such
// URLs with an [*Error] of reason "cross_origin" instead. [FetchMetadata]
// performs the fetch and prm.Parse the §3.3 check (the document's resource
// must equal Config.Resource, else an [*Error] of reason
// "resource_mismatch"); what a server merely SHOULD NOT publish (offline_access in scopes_supported, an unknown
// bearer method) does not make a document unusable. Metadata is cached
// for [Config.MetadataTTL], except that a 401 for a token the resource had
// accepted reads it again: the resource may have moved to another
// authorization server (MCP 2026-07-28, SEP-2352), which
// [AuthorizeRequest.AuthorizationServersChanged] then reports. The
// Authorizer gets the document's "resource" as the RFC 8707 resource
// indicator. See docs/client.md.
//
// # Loops and limits
//
// A 403 whose scopes are all already requested or granted fails at once
// with an [*Error] of reason "step_up_loop" (typescript-sdk#1582): the
// server refuses a scope the authorization server did not grant, and
// asking again would prompt the user forever. So does a 401 to a token
// obtained during the same RoundTrip that asks for nothing new. These
// errors, like those of reasons "retries_exhausted" and "cross_origin",
// carry the status and the challenge (Error.StatusCode, Error.Challenge);
// the response body is drained and closed, and RoundTrip returns no
// response. One RoundTrip performs at most [Config.MaxRetries]
// authorizations and sends at most 2*MaxRetries+1 requests.
//
// # Concurrency
//
// Concurrent RoundTrips share the token source and the scope sets. Only
// one authorization runs at a time; a RoundTrip that is challenged while
// another one authorizes waits for it (or for its context) and resends
// with the new token instead of authorizing again, so concurrent step-ups
// coalesce. If that authorization failed, the waiter tries its own.
//
// # Request bodies
//
// To resend a request the body must be replayable: the transport uses
// req.GetBody, or buffers a body without GetBody up to 4 MiB. A
// larger body is sent once and its 401 or 403 is returned as is. Bodies
// without GetBody are read before the request is sent, so a body that
// must stream concurrently with the response needs GetBody.
//
// # Token sources
//
// Tokens come from oauth2.TokenSource values wrapped in
// oauth2.ReuseTokenSource. A token source error fails the RoundTrip with
// an [*Error] of reason "token_source"; the transport does not
// re-authorize on its own then.
// The token is always sent as "Bearer".
//
// # Upstream tokens
//
// An MCP server must not pass the token it received through to upstream
// APIs (MCP §Token Passthrough). [UpstreamTokenSource] obtains the server's
// own token with client credentials, and [ExchangeToken] trades the
// inbound token for an upstream one at the authorization server (RFC 8693).
package client
