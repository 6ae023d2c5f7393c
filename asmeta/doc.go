// Package asmeta holds OAuth 2.0 Authorization Server Metadata (RFC 8414)
// and its discovery, in the URL order the MCP authorization specification
// prescribes (RFC 8414 first, then OpenID Connect Discovery), with the
// issuer mix-up check of RFC 8414 §3.3.
package asmeta
