package prm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"
)

// MaxMetadataBytes caps the body [Fetch] reads: 64 KiB.
const MaxMetadataBytes = 64 << 10

// fetchTimeout is the timeout of the client Fetch uses when given nil.
const fetchTimeout = 10 * time.Second

// errNoRedirect makes the client return the 3xx response instead of
// following it.
var errNoRedirect = errors.New("prm: redirect refused")

// Fetch retrieves and checks the protected-resource metadata at metadataURL
// for the resource identifier wantResource (client side, RFC 9728 §3.1-3.3):
//
//   - metadataURL must be https, or http with a loopback host;
//   - one GET with Accept: application/json; redirects are never followed
//     (a 3xx is an error), so a document cannot come from another origin;
//   - the response must be 200 with media type application/json and at most
//     [MaxMetadataBytes] of body;
//   - the document's resource must be identical to wantResource
//     (RFC 9728 §3.3; no normalisation), else [ErrResourceMismatch];
//   - finally [Metadata.Validate] must pass.
//
// For the URL from a WWW-Authenticate resource_metadata, wantResource is the
// URL the client requested; for a probed well-known URL, it is the
// identifier the URL was built from ([RootMetadataURL] pairs with the
// origin). If c is nil, a client with a 10 second timeout is used. c is not
// modified; Fetch uses a copy with its own redirect policy.
func Fetch(ctx context.Context, c *http.Client, metadataURL, wantResource string) (*Metadata, error) {
	if wantResource == "" {
		return nil, fmt.Errorf("%w: expected resource is empty", ErrInvalidResource)
	}
	if rerr := checkURL(metadataURL, urlRules{secure: true}); rerr != nil {
		return nil, fmt.Errorf("%w: metadata url: %s", ErrFetch, rerr.msg)
	}
	var hc http.Client
	if c != nil {
		hc = *c
	} else {
		hc.Timeout = fetchTimeout
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return errNoRedirect }

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metadataURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(err, errNoRedirect) {
			return nil, fmt.Errorf("%w: redirect refused", ErrFetch)
		}
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: status %d", ErrFetch, resp.StatusCode)
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, fmt.Errorf("%w: content type is not application/json", ErrFetch)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxMetadataBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	if len(body) > MaxMetadataBytes {
		return nil, fmt.Errorf("%w: body exceeds %d bytes", ErrFetch, MaxMetadataBytes)
	}
	var m Metadata
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: malformed JSON: %w", ErrInvalidMetadata, err)
	}
	if m.Resource != wantResource {
		return nil, ErrResourceMismatch
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}
