package cimd

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mcpguard/mcpguard/internal/clientrecord"
)

// Store persists dynamically registered clients. It is the consumer-side
// interface [Registry] and [DCRHandler] need; cimd/boltstore (embedded
// and persistent, one process) and redisstore.NewClientStore (shared by
// replicas) implement it.
// Implementations must be safe for concurrent use. Persist a Client as
// JSON (encoding/json with SetEscapeHTML(false): plain json.Marshal
// escapes '<', '>' and '&' to six bytes each), which keeps the secret
// hash, and refuse a record over 32 KiB with an error wrapping
// [ErrRecordTooLarge]. Bound what you keep: registration is
// unauthenticated.
type Store interface {
	// Put saves c under c.ClientID, replacing any earlier value.
	Put(ctx context.Context, c *Client) error
	// Get returns the client with the given id, or an error wrapping
	// [ErrUnknownClient].
	Get(ctx context.Context, id string) (*Client, error)
}

var _ Store = (*memoryStore)(nil)

// maxRecordBytes caps one client as the stores keep it (its JSON, not
// HTML-escaped): twice 16 KiB, internal/clientrecord.MaxBytes.
// A registration accepted under the default DCRConfig.MaxBodyBytes is
// stored in about its request size plus a few hundred bytes, so only a
// raised MaxBodyBytes (or pathological content) can reach the cap. Put
// refuses a larger client with an error wrapping [ErrRecordTooLarge],
// and [DCRHandler] then answers 400 invalid_client_metadata.
const maxRecordBytes = clientrecord.MaxBytes

// The cap is twice the default request cap.
var _ [0]struct{} = [maxRecordBytes - 2*defaultMaxBodyBytes]struct{}{}

// encodeRecord returns the stored form of c, or an error wrapping
// ErrRecordTooLarge when it exceeds maxRecordBytes.
func encodeRecord(c *Client) ([]byte, error) {
	v, err := marshalNoEscape(c)
	if err != nil {
		return nil, fmt.Errorf("cimd: encode client: %w", err)
	}
	if len(v) > maxRecordBytes {
		return nil, fmt.Errorf("%w: %d bytes, the cap is %d", ErrRecordTooLarge, len(v), maxRecordBytes)
	}
	return v, nil
}

// prunable reports whether Prune(issuedBefore) removes a client issued at
// issuedAt: registered (non-zero IssuedAt) strictly before issuedBefore.
func prunable(issuedAt, issuedBefore time.Time) bool {
	return !issuedAt.IsZero() && issuedAt.Before(issuedBefore)
}

// memoryStore is an in-memory [Store] for the tests. Its contents
// are lost with the process. Each client is capped at [maxRecordBytes];
// the number of clients is bounded only by [memoryStore.Prune].
type memoryStore struct {
	mu sync.RWMutex
	m  map[string]*Client
}

// newMemoryStore returns an empty memoryStore.
func newMemoryStore() *memoryStore {
	return &memoryStore{m: make(map[string]*Client)}
}

// Put implements [Store]. It stores a copy of c, or fails with
// [ErrRecordTooLarge] when c's stored form would exceed [maxRecordBytes].
func (s *memoryStore) Put(_ context.Context, c *Client) error {
	if _, err := encodeRecord(c); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[c.ClientID] = c.clone()
	return nil
}

// Get implements [Store]. It returns a copy.
func (s *memoryStore) Get(_ context.Context, id string) (*Client, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.m[id]
	if !ok {
		return nil, fmt.Errorf("%w: not in store", ErrUnknownClient)
	}
	return c.clone(), nil
}

// Delete removes the client with the given id, if any.
func (s *memoryStore) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
	return nil
}

// Prune removes every client registered before issuedBefore (IssuedAt
// non-zero and before it) and returns how many it removed. Clients with
// a zero IssuedAt, which a [DCRHandler] never stores, are kept. See
// boltstore.Store.Prune.
func (s *memoryStore) Prune(ctx context.Context, issuedBefore time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, c := range s.m {
		if prunable(c.IssuedAt, issuedBefore) {
			delete(s.m, id)
			n++
		}
	}
	return n, nil
}
