package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/internal/strictjson"
	"github.com/mcpguard/mcpguard/prm"
)

// FetchMetadata retrieves the protected-resource metadata at metadataURL
// and checks it for the resource identifier wantResource, as an MCP client
// must (RFC 9728 §3.1-3.3):
//
//   - metadataURL must be https, or http with a loopback host;
//   - one GET accepting JSON; redirects are never followed (a 3xx is an
//     error), whatever hc's policy, and hc is not modified;
//   - the answer must be 200 with a JSON media type and at most
//     64 KiB of body, read within hc's timeout and ctx;
//   - the body must be one JSON value without repeated member names or
//     invalid UTF-8 (internal/strictjson, the project's one JSON reader),
//     else prm.ErrInvalidMetadata;
//   - [prm.Parse] then applies the same policy with case variants of the
//     names it reads (its own checker: prm is a standard-library leaf) and
//     the §3.3 checks: "resource" identical to wantResource, at least one
//     usable authorization server.
//
// A failure to obtain the document wraps an [*Error] of reason
// "metadata_fetch" (and the transport, status or context error); a document that fails the checks
// wraps prm.ErrResourceMismatch or prm.ErrInvalidMetadata. If hc is nil, a
// client with a 10 second timeout, no redirects and no environment proxies
// is used; it has no address guard, so pass asmeta.NewGuardedClient's
// client for a URL that an untrusted party chose (the transport does so for
// a resource_metadata URL on another origin).
func FetchMetadata(ctx context.Context, hc *http.Client, metadataURL, wantResource string) (*prm.Metadata, error) {
	if wantResource == "" {
		return nil, fmt.Errorf("%w: expected resource is empty", prm.ErrInvalidResource)
	}
	var c http.Client
	if hc != nil {
		c = *hc
	} else {
		c = *fetch.NewClient(fetch.ClientConfig{})
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := fetch.Get(ctx, &c, metadataURL, fetch.MaxResourceMetadataBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errMetadataFetch, err)
	}
	// The project's strict reader first: a repeated member name or invalid
	// UTF-8 would leave what "resource" says to the decoder's choice.
	if strictjson.Valid(resp.Body) != nil {
		return nil, fmt.Errorf("%w: not valid JSON (syntax, invalid UTF-8 or a repeated member name)", prm.ErrInvalidMetadata)
	}
	return prm.Parse(resp.Body, wantResource)
}

// isFetchFailure reports whether err means the document could not be
// obtained (so the next well-known URL may be tried).
func isFetchFailure(err error) bool { return errors.Is(err, errMetadataFetch) }
