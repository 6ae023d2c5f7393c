// Package fetch performs bounded HTTP GETs of JSON documents whose URL an
// attacker may influence: JWKS, authorization-server metadata, protected
// resource metadata and Client ID Metadata Documents.
//
// Every fetch is bounded: a total deadline (body included), a body cap applied
// after transparent decompression, a media-type check, 200-only, no
// environment proxies and an explicit redirect policy. [NewClient] can also
// install an SSRF guard that checks the IP address actually being dialled
// (after DNS resolution), using code.dny.dev/ssrf, which is generated from
// the IANA special-purpose registries.
//
//	c := fetch.NewClient(fetch.ClientConfig{GuardAddresses: true})
//	var doc map[string]any
//	resp, err := fetch.Get(ctx, c, "https://app.example/client.json", 5<<10) // then a strict JSON read of resp.Body
package fetch
