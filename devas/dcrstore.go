package devas

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/internal/clientrecord"
)

// regStore is the built-in [cimd.Store] of dynamically registered
// clients: in memory, at most Config.MaxRegistrations clients, each kept
// for Config.RegistrationTTL from its registration. A registration into a
// full store drops the expired clients, then the one registered first, so
// an open development server stays bounded and the newest registrations
// keep working.
type regStore struct {
	s   *store[[]byte] // the stored form, internal/clientrecord
	ttl time.Duration
	now func() time.Time
}

var _ cimd.Store = (*regStore)(nil)

func newRegStore(max int, ttl time.Duration, now func() time.Time) *regStore {
	return &regStore{s: newStore[[]byte](max), ttl: ttl, now: now}
}

// Put implements [cimd.Store]. It refuses a client whose stored form
// exceeds 32 KiB with an error wrapping
// [cimd.ErrRecordTooLarge].
func (r *regStore) Put(ctx context.Context, c *cimd.Client) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := clientrecord.Marshal(c)
	if err != nil {
		return fmt.Errorf("devas: encode client: %w", err)
	}
	if len(b) > clientrecord.MaxBytes {
		return fmt.Errorf("%w: %d bytes, the cap is %d", cimd.ErrRecordTooLarge, len(b), clientrecord.MaxBytes)
	}
	now := r.now()
	r.s.putEvict(c.ClientID, b, now.Add(r.ttl), now)
	return nil
}

// Get implements [cimd.Store]. An expired client is unknown.
func (r *regStore) Get(ctx context.Context, id string) (*cimd.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, ok := r.s.update(id, r.now(), nil)
	if !ok {
		return nil, fmt.Errorf("%w: not registered, or registration expired", cimd.ErrUnknownClient)
	}
	c := new(cimd.Client)
	if err := clientrecord.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("devas: decode client: %w", err)
	}
	return c, nil
}

// putEvict stores v under key until exp, replacing any value there. It
// never refuses for lack of room: a full store drops expired entries,
// then the one that expires first.
func (s *store[V]) putEvict(key string, v V, exp, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; !ok && len(s.m) >= s.max {
		s.evictLocked(now)
	}
	s.m[key] = entry[V]{v, exp}
}
