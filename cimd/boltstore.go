package cimd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

var boltBucket = []byte("cimd.clients.v1")

// BoltStore is a persistent [Store] in a single bbolt file, the default
// embedded store for dynamic registrations. Clients are kept as the JSON
// [Client.MarshalJSON] produces (secret hashes, never secrets). Close it
// when done.
type BoltStore struct {
	db *bolt.DB
}

// NewBoltStore opens (creating if needed, mode 0600) the bbolt file at
// path. It waits at most one second for the file lock, which another
// process holding the file would keep.
func NewBoltStore(path string) (*BoltStore, error) {
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
	return &BoltStore{db: db}, nil
}

// Put implements [Store].
func (s *BoltStore) Put(_ context.Context, c *Client) error {
	v, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("cimd: bolt store: %w", err)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(boltBucket).Put([]byte(c.ClientID), v)
	})
}

// Get implements [Store].
func (s *BoltStore) Get(_ context.Context, id string) (*Client, error) {
	var c *Client
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(boltBucket).Get([]byte(id))
		if v == nil {
			return fmt.Errorf("%w: not in store", ErrUnknownClient)
		}
		c = new(Client)
		// Unmarshal copies out of the mmap, which is valid only inside the
		// transaction.
		if err := json.Unmarshal(v, c); err != nil {
			return fmt.Errorf("cimd: bolt store: corrupt record: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Delete removes the client with the given id, if any.
func (s *BoltStore) Delete(_ context.Context, id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(boltBucket).Delete([]byte(id))
	})
}

// Close closes the file.
func (s *BoltStore) Close() error {
	return s.db.Close()
}
