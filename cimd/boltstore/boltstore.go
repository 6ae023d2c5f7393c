package boltstore

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/internal/clientrecord"
)

var boltBucket = []byte("cimd.clients.v1")

var _ cimd.Store = (*Store)(nil)

// Store is a persistent cimd.Store in a single bbolt file, the embedded
// store for dynamic registrations of one process (for several replicas,
// see redisstore.NewClientStore). Clients are kept as the JSON
// internal/clientrecord produces from a cimd.Client (secret hashes, never secrets), each
// at most 32 KiB. It never removes a client by itself:
// bound it with [Store.Prune]. Close it when done.
type Store struct {
	db *bolt.DB
}

// Open opens (creating if needed, mode 0600) the bbolt file at path. It
// waits at most one second for the file lock, which another process
// holding the file would keep. The file format is the one
// cimd.BoltStore used, so existing files open unchanged.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("cimd: open bolt store: %w", err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltBucket)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("cimd: open bolt store: %w", err)
	}
	return &Store{db: db}, nil
}

// Put implements cimd.Store. The record is the client's JSON
// (compact, not HTML-escaped); one larger than 32 KiB is
// refused with an error wrapping cimd.ErrRecordTooLarge.
func (s *Store) Put(_ context.Context, c *cimd.Client) error {
	v, err := clientrecord.Marshal(c)
	if err != nil {
		return fmt.Errorf("cimd: bolt store: encode client: %w", err)
	}
	if len(v) > clientrecord.MaxBytes {
		return fmt.Errorf("cimd: bolt store: %w: %d bytes, the cap is %d", cimd.ErrRecordTooLarge, len(v), clientrecord.MaxBytes)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(boltBucket).Put([]byte(c.ClientID), v)
	})
}

// Get implements cimd.Store.
func (s *Store) Get(_ context.Context, id string) (*cimd.Client, error) {
	var c *cimd.Client
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(boltBucket).Get([]byte(id))
		if v == nil {
			return fmt.Errorf("%w: not in store", cimd.ErrUnknownClient)
		}
		c = new(cimd.Client)
		// Unmarshal copies out of the mmap, which is valid only inside the
		// transaction.
		if err := clientrecord.Unmarshal(v, c); err != nil {
			return fmt.Errorf("cimd: bolt store: corrupt record: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Prune removes every client registered before issuedBefore (IssuedAt
// non-zero and before it) and returns how many it removed. Clients with
// a zero IssuedAt, which a cimd.DCRHandler never stores, are kept, and so
// are records that cannot be decoded. Registration is unauthenticated and
// this package never prunes on its own: call Prune periodically, for
// example daily with time.Now().Add(-90 * 24 * time.Hour), to bound the
// file. A pruned client is unknown from then on (its tokens stop
// working at the next lookup) and must register again. Prune runs in one
// write transaction: ctx is checked before it starts and between
// records, and a cancelled Prune removes nothing. bbolt reuses the freed
// pages; the file itself does not shrink.
func (s *Store) Prune(ctx context.Context, issuedBefore time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(boltBucket)
		var old [][]byte
		err := b.ForEach(func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			var r struct {
				IssuedAt time.Time `json:"issued_at"`
			}
			if clientrecord.Unmarshal(v, &r) == nil && !r.IssuedAt.IsZero() && r.IssuedAt.Before(issuedBefore) {
				old = append(old, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		// Deleting inside ForEach is not allowed; the keys are copies.
		for _, k := range old {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(old)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cimd: bolt store: prune: %w", err)
	}
	return n, nil
}

// Close closes the file.
func (s *Store) Close() error {
	return s.db.Close()
}
