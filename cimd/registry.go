package cimd

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// RegistryConfig configures [NewRegistry]. Each source is off when nil.
type RegistryConfig struct {
	// Resolver resolves URL client_ids as Client ID Metadata Documents. If
	// nil, CIMD is off and such client_ids are unknown.
	Resolver *Resolver
	// Store holds dynamically registered clients (the one a [DCRHandler]
	// writes to). If nil, only static and CIMD clients exist.
	Store Store
	// Static are pre-registered clients, copied. Their Source is set to
	// "static". ClientIDs must be unique and at most 2048 bytes;
	// redirect URIs follow the registration rules (private-use schemes
	// allowed, since the operator vouches for them).
	Static []Client
	// Now returns the current time, for secret expiry. If nil, time.Now.
	Now func() time.Time
}

// Registry looks clients up across pre-registered clients, Client ID
// Metadata Documents and dynamic registrations. It is safe for concurrent
// use.
type Registry struct {
	resolver *Resolver
	store    Store
	static   map[string]*Client
	now      func() time.Time
}

// NewRegistry returns a Registry for cfg. It fails with an [*Error] with Reason
// "config" if a
// static client is invalid or duplicated.
func NewRegistry(cfg RegistryConfig) (*Registry, error) {
	r := &Registry{
		resolver: cfg.Resolver,
		store:    cfg.Store,
		static:   make(map[string]*Client, len(cfg.Static)),
		now:      cfg.Now,
	}
	if r.now == nil {
		r.now = time.Now
	}
	for i := range cfg.Static {
		c := cfg.Static[i].clone()
		if c.ClientID == "" || len(c.ClientID) > maxURLBytes {
			return nil, fmt.Errorf("%w: static client %d: client_id empty or too long", errConfig, i)
		}
		if _, dup := r.static[c.ClientID]; dup {
			return nil, fmt.Errorf("%w: static client %d: duplicate client_id", errConfig, i)
		}
		// Static clients get the same semantic checks and effective
		// defaults (auth method, grant and response types) as dynamically
		// registered ones, so the authorization endpoint sees one shape.
		sp := policy{
			defaultAuthMethod: authMethodNone,
			authMethods:       []string{authMethodNone, authMethodClientSecretBasic, authMethodClientSecretPost, authMethodPrivateKeyJWT},
			allowPrivateUse:   true,
		}
		if len(c.SecretSHA256) > 0 {
			sp.defaultAuthMethod = authMethodClientSecretBasic
		}
		if err := sp.validate(&c.Document); err != nil {
			return nil, fmt.Errorf("%w: static client %d: %w", errConfig, i, err)
		}
		c.Source = sourceStatic
		r.static[c.ClientID] = c
	}
	return r, nil
}

// Lookup returns the client with the given client_id:
//
//  1. a pre-registered (static) client with exactly that id, which lets an
//     operator pin a CIMD client_id to local metadata;
//  2. a client_id starting with "https://": the Client ID Metadata
//     Document it names, through the Resolver;
//  3. otherwise a dynamically registered client from the Store.
//
// The Client returned is the caller's to modify. Errors wrap
// [ErrUnknownClient] or one of the [Resolver.Resolve] errors; answer the
// client with "invalid_client" and one fixed description, and log the
// error ([Error]).
func (r *Registry) Lookup(ctx context.Context, clientID string) (*Client, error) {
	if c, ok := r.static[clientID]; ok {
		return c.clone(), nil
	}
	if strings.HasPrefix(clientID, "https://") {
		if r.resolver == nil {
			return nil, fmt.Errorf("%w: client id metadata documents are off", ErrUnknownClient)
		}
		d, err := r.resolver.Resolve(ctx, clientID)
		if err != nil {
			return nil, err
		}
		return &Client{Document: *d, Source: sourceCIMD}, nil
	}
	if r.store == nil || clientID == "" || len(clientID) > maxURLBytes {
		return nil, fmt.Errorf("%w: no such client", ErrUnknownClient)
	}
	c, err := r.store.Get(ctx, clientID)
	if err != nil {
		return nil, err
	}
	c.Source = sourceDCR
	return c, nil
}

// VerifySecret authenticates a confidential client by its secret
// (client_secret_basic or client_secret_post, RFC 6749 §2.3.1): it looks
// the client up, compares the secret's SHA-256 hash in constant time and
// checks client_secret_expires_at. Errors wrap [ErrUnknownClient] (or a
// lookup error), or are an [*Error] with Reason "invalid_secret"
// (including clients without a secret) or "secret_expired". The external
// answer is always "invalid_client" with one fixed description ([Error]).
func (r *Registry) VerifySecret(ctx context.Context, clientID, secret string) error {
	c, err := r.Lookup(ctx, clientID)
	if err != nil {
		return err
	}
	if !c.secretMatches(secret) {
		return errInvalidSecret
	}
	if !c.SecretExpiresAt.IsZero() && !r.now().Before(c.SecretExpiresAt) {
		return errSecretExpired
	}
	return nil
}
