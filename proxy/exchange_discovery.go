package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/internal/fetch"
)

// tokenEndpointBackoff is the shortest time between two attempts to
// discover one issuer's token endpoint.
const tokenEndpointBackoff = 5 * time.Second

// tokenEndpoints finds the token endpoint of an exchange when
// Exchange.TokenEndpoint is empty: the token_endpoint of the metadata of
// the issuer of the client's token (RFC 8414, then OpenID Connect
// Discovery, by asmeta.Discover), discovered once per issuer. The issuers
// are those of the route (the client's token was validated), so the maps
// are bounded by them. A failed discovery is retried at most every
// tokenEndpointBackoff; until then its error is returned at once.
type tokenEndpoints struct {
	client *http.Client
	now    func() time.Time

	flight singleflight.Group
	mu     sync.Mutex
	found  map[string]string
	failed map[string]failedDiscovery
}

type failedDiscovery struct {
	at  time.Time
	err error
}

func newTokenEndpoints(client *http.Client, now func() time.Time) *tokenEndpoints {
	return &tokenEndpoints{client: client, now: now, found: map[string]string{}, failed: map[string]failedDiscovery{}}
}

// get returns issuer's token endpoint, discovering it on first use. Its
// errors wrap errIdentityUnavailable (503: the client may retry).
func (t *tokenEndpoints) get(ctx context.Context, issuer string) (string, error) {
	now := t.now()
	t.mu.Lock()
	ep, ok := t.found[issuer]
	f, failed := t.failed[issuer]
	t.mu.Unlock()
	if ok {
		return ep, nil
	}
	if failed && now.Sub(f.at) < tokenEndpointBackoff && !now.Before(f.at) {
		return "", f.err
	}
	v, err, _ := t.flight.Do(issuer, func() (any, error) {
		ep, err := t.discover(ctx, issuer)
		t.mu.Lock()
		defer t.mu.Unlock()
		if err != nil {
			err = fmt.Errorf("%w: discovering the token endpoint of %s: %w", errIdentityUnavailable, issuer, err)
			t.failed[issuer] = failedDiscovery{at: t.now(), err: err}
			return "", err
		}
		delete(t.failed, issuer)
		t.found[issuer] = ep
		return ep, nil
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func (t *tokenEndpoints) discover(ctx context.Context, issuer string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	defer cancel()
	md, err := asmeta.Discover(ctx, t.client, issuer)
	if err != nil {
		return "", err
	}
	if md.TokenEndpoint == "" {
		return "", errors.New("metadata has no token_endpoint")
	}
	if _, err := fetch.CheckURL(md.TokenEndpoint, true); err != nil {
		return "", fmt.Errorf("token_endpoint: %w", err)
	}
	return md.TokenEndpoint, nil
}
