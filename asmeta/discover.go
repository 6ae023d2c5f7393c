package asmeta

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Discover fetches the authorization server metadata for issuer, trying
// [WellKnownURLs] in order, and returns the first document whose "issuer"
// member is byte-identical to issuer (RFC 8414 §3.3, OIDC Discovery §4.3).
//
// A URL that answers with a non-200 status, a non-JSON media type, a body
// over 256 KiB (decompressed) or invalid JSON is skipped. A document naming a
// different issuer is never used (mix-up defence, RFC 8414 §3.3); Discover
// then goes on to the next URL rather than failing at once. That is as safe
// as failing hard: a mismatched document is discarded either way, and an
// attacker able to serve a matching document at a later URL of the same
// origin could do so whether or not an earlier URL mismatched. It is more
// robust, because some servers route every path under /.well-known/… to one
// handler and answer the path-inserted URL with the origin's own metadata.
// If no URL yields a matching document and at least one mismatched, the
// error wraps [ErrIssuerMismatch]; otherwise it wraps [ErrNotFound].
//
// The document that matches is then checked with the URL rules of
// [Metadata.Validate] (https endpoints and jwks_uri); a failure there wraps
// [ErrInvalidMetadata] and ends discovery, because that document is the
// server's own statement about itself. Discover does not require the other
// RFC 8414 members; call [Metadata.Validate] for full conformance.
//
// Discovery stops early when ctx is done or the dial guard of c refuses
// the address (every URL shares the issuer's host). If c is nil, Discover
// uses [NewGuardedClient] with its zero config: public addresses on port
// 443 only, 10 s timeout, no redirects, no proxies. That is the right
// client for a client-side discovery of an issuer named by a server; pass
// your own client for an operator-configured issuer on a private network
// (or NewGuardedClient with InsecureAllowLoopback in tests). An invalid
// issuer wraps [ErrInvalidIssuer].
func Discover(ctx context.Context, c *http.Client, issuer string) (*Metadata, error) {
	urls, err := WellKnownURLs(issuer)
	if err != nil {
		return nil, err
	}
	if c == nil {
		c = NewGuardedClient(GuardConfig{})
	}
	var mismatch, last error
	for _, u := range urls {
		var m Metadata
		if err := getMetadata(ctx, c, u, &m); err != nil {
			last = fmt.Errorf("%s: %w", u, err)
			if ctx.Err() != nil || errors.Is(err, fetch.ErrForbiddenAddress) {
				break
			}
			continue
		}
		if err := m.checkIssuer(issuer); err != nil {
			mismatch = fmt.Errorf("%s: %w", u, err)
			continue
		}
		if err := m.checkURLs(issuer); err != nil {
			return nil, fmt.Errorf("%s: %w", u, err)
		}
		return &m, nil
	}
	if mismatch != nil {
		return nil, mismatch
	}
	return nil, fmt.Errorf("%w: %w", ErrNotFound, last)
}

// getMetadata fetches the document at u (bounded, see internal/fetch) and
// reads it with the module's one strict JSON reader: one value, valid
// UTF-8, no repeated member name at any depth, members matched to fields
// case-sensitively (internal/strictjson).
func getMetadata(ctx context.Context, c *http.Client, u string, m *Metadata) error {
	resp, err := fetch.Get(ctx, c, u, fetch.MaxServerMetadataBytes)
	if err != nil {
		return err
	}
	if err := strictjson.Unmarshal(resp.Body, m); err != nil {
		return fmt.Errorf("%w: %w", fetch.ErrDecode, err)
	}
	return nil
}
