package cimd

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Store persists dynamically registered clients. It is the consumer-side
// interface [Registry] and [DCRHandler] need; cimd/boltstore (embedded
// and persistent, one process), redisstore.ClientStore (shared by
// replicas) and [MemoryStore] (tests) implement it.
// Implementations must be safe for concurrent use. Persist a Client with
// its MarshalJSON method (compact, not HTML-escaped; json.Marshal works
// but escapes '<', '>' and '&' to six bytes each) and restore it with
// json.Unmarshal: that keeps the secret hash, which is not an exported
// field. Bound what you keep: registration is unauthenticated.
type Store interface {
	// Put saves c under c.ClientID, replacing any earlier value.
	Put(ctx context.Context, c *Client) error
	// Get returns the client with the given id, or an error wrapping
	// [ErrUnknownClient].
	Get(ctx context.Context, id string) (*Client, error)
}

var _ Store = (*MemoryStore)(nil)

// MaxRecordBytes caps one client as cimd/boltstore and [MemoryStore] keep it
// (the JSON [Client.MarshalJSON] produces): twice 16 KiB.
// A registration accepted under the default DCRConfig.MaxBodyBytes is
// stored in about its request size plus a few hundred bytes, so only a
// raised MaxBodyBytes (or pathological content) can reach the cap. Put
// refuses a larger client with an error wrapping [ErrRecordTooLarge],
// and [DCRHandler] then answers 400 invalid_client_metadata.
const MaxRecordBytes = 2 * defaultMaxBodyBytes

// encodeRecord returns the stored form of c, or an error wrapping
// ErrRecordTooLarge when it exceeds MaxRecordBytes.
func encodeRecord(c *Client) ([]byte, error) {
	v, err := c.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("cimd: encode client: %w", err)
	}
	if len(v) > MaxRecordBytes {
		return nil, fmt.Errorf("%w: %d bytes, the cap is %d", ErrRecordTooLarge, len(v), MaxRecordBytes)
	}
	return v, nil
}

// prunable reports whether Prune(issuedBefore) removes a client issued at
// issuedAt: registered (non-zero IssuedAt) strictly before issuedBefore.
func prunable(issuedAt, issuedBefore time.Time) bool {
	return !issuedAt.IsZero() && issuedAt.Before(issuedBefore)
}

// MemoryStore is an in-memory [Store] for tests and examples. Its contents
// are lost with the process. Each client is capped at [MaxRecordBytes];
// the number of clients is bounded only by [MemoryStore.Prune].
type MemoryStore struct {
	mu sync.RWMutex
	m  map[string]*Client
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{m: make(map[string]*Client)}
}

// Put implements [Store]. It stores a copy of c, or fails with
// [ErrRecordTooLarge] when c's stored form would exceed [MaxRecordBytes].
func (s *MemoryStore) Put(_ context.Context, c *Client) error {
	if _, err := encodeRecord(c); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[c.ClientID] = c.Clone()
	return nil
}

// Get implements [Store]. It returns a copy.
func (s *MemoryStore) Get(_ context.Context, id string) (*Client, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.m[id]
	if !ok {
		return nil, fmt.Errorf("%w: not in store", ErrUnknownClient)
	}
	return c.Clone(), nil
}

// Delete removes the client with the given id, if any.
func (s *MemoryStore) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
	return nil
}

// Prune removes every client registered before issuedBefore (IssuedAt
// non-zero and before it) and returns how many it removed. Clients with
// a zero IssuedAt, which a [DCRHandler] never stores, are kept. See
// boltstore.Store.Prune.
func (s *MemoryStore) Prune(ctx context.Context, issuedBefore time.Time) (int, error) {
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
