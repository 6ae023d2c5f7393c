package cimd

import (
	"context"
	"fmt"
	"sync"
)

// Store persists dynamically registered clients. It is the consumer-side
// interface [Registry] and [DCRHandler] need; [BoltStore] (the default,
// embedded and persistent) and [MemoryStore] (tests) implement it.
// Implementations must be safe for concurrent use. Persist a Client with
// json.Marshal and restore it with json.Unmarshal: that keeps the secret
// hash, which is not an exported field.
type Store interface {
	// Put saves c under c.ClientID, replacing any earlier value.
	Put(ctx context.Context, c *Client) error
	// Get returns the client with the given id, or an error wrapping
	// [ErrUnknownClient].
	Get(ctx context.Context, id string) (*Client, error)
}

var (
	_ Store = (*MemoryStore)(nil)
	_ Store = (*BoltStore)(nil)
)

// MemoryStore is an in-memory [Store] for tests and examples. Its contents
// are lost with the process, and it is unbounded.
type MemoryStore struct {
	mu sync.RWMutex
	m  map[string]*Client
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{m: make(map[string]*Client)}
}

// Put implements [Store]. It stores a copy of c.
func (s *MemoryStore) Put(_ context.Context, c *Client) error {
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
