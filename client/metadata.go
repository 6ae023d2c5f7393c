package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/prm"
)

// maxCachedMetadata bounds the metadata cache; a server can name many
// resource_metadata URLs on its origin.
const maxCachedMetadata = 16

type mdEntry struct {
	md *prm.Metadata
	at time.Time
}

// mdCache caches checked metadata by URL and expected resource.
type mdCache struct {
	mu sync.Mutex
	m  map[string]mdEntry
}

// metadata returns the protected-resource metadata for challenge URL
// metaURL, or, if it is empty, from the
// RFC 9728 §3.1 well-known URLs of the resource: the path-inserted one
// first, then the root one (MCP §Protected Resource Metadata Discovery).
// Every document must pass the RFC 9728 §3.3 resource check
// ([FetchMetadata]). A metaURL on another origin than the resource is
// fetched with Config.CrossOriginHTTPClient (SSRF-guarded by default).
// With reread, cached documents are not used (but the new ones are
// cached).
func (t *Transport) metadata(ctx context.Context, metaURL string, reread bool) (*prm.Metadata, error) {
	type try struct{ url, want string }
	var tries []try
	if metaURL != "" {
		tries = []try{{metaURL, t.cfg.Resource}}
	} else {
		inserted, err := prm.MetadataURL(t.cfg.Resource)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errMetadata, err)
		}
		tries = []try{{inserted, t.cfg.Resource}}
		u, _ := url.Parse(t.cfg.Resource) // checked by New
		origin := strings.ToLower(u.Scheme + "://" + u.Host)
		if root, err := prm.MetadataURL(origin); err == nil && root != inserted { // the root well-known URL
			tries = append(tries, try{root, origin})
		}
	}
	var err error
	for _, tr := range tries {
		var md *prm.Metadata
		md, err = t.fetchCached(ctx, tr.url, tr.want, reread)
		if err == nil {
			return cloneMetadata(md), nil
		}
		if !isFetchFailure(err) {
			break // only a missing document falls back to the next URL
		}
	}
	if errors.Is(err, prm.ErrResourceMismatch) {
		return nil, fmt.Errorf("%w: %w", errResourceMismatch, err)
	}
	return nil, fmt.Errorf("%w: %w", errMetadata, err)
}

func (t *Transport) fetchCached(ctx context.Context, metaURL, want string, reread bool) (*prm.Metadata, error) {
	key := metaURL + "\x00" + want
	now := t.cfg.Now()
	t.md.mu.Lock()
	e, ok := t.md.m[key]
	t.md.mu.Unlock()
	if ok && !reread && now.Sub(e.at) < t.cfg.MetadataTTL && !now.Before(e.at) {
		return e.md, nil
	}
	hc := t.cfg.HTTPClient
	if !t.sameOriginURL(metaURL) {
		hc = t.cfg.CrossOriginHTTPClient
	}
	md, err := FetchMetadata(ctx, hc, metaURL, want)
	if err != nil {
		return nil, err
	}
	if t.cfg.MetadataTTL > 0 {
		t.md.mu.Lock()
		if t.md.m == nil || len(t.md.m) >= maxCachedMetadata {
			t.md.m = make(map[string]mdEntry)
		}
		t.md.m[key] = mdEntry{md: md, at: now}
		t.md.mu.Unlock()
	}
	return md, nil
}

// cloneMetadata returns a copy of m that shares no slice with it.
func cloneMetadata(m *prm.Metadata) *prm.Metadata {
	c := *m
	c.AuthorizationServers = slices.Clone(m.AuthorizationServers)
	c.ScopesSupported = slices.Clone(m.ScopesSupported)
	c.BearerMethodsSupported = slices.Clone(m.BearerMethodsSupported)
	c.ResourceSigningAlgValuesSupported = slices.Clone(m.ResourceSigningAlgValuesSupported)
	c.AuthorizationDetailsTypesSupported = slices.Clone(m.AuthorizationDetailsTypesSupported)
	c.DPoPSigningAlgValuesSupported = slices.Clone(m.DPoPSigningAlgValuesSupported)
	return &c
}
