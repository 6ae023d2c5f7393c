package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/cimd/boltstore"
)

// Registrations are unauthenticated, and the store never forgets on its
// own: prune old ones periodically to bound it. A pruned client must
// register again.
func ExampleStore_Prune() {
	dir, _ := os.MkdirTemp("", "cimd")
	defer os.RemoveAll(dir)
	store, err := boltstore.Open(filepath.Join(dir, "clients.db"))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	for id, age := range map[string]time.Duration{"dcr_old": 100 * 24 * time.Hour, "dcr_recent": time.Hour} {
		c := &cimd.Client{Document: cimd.Document{ClientID: id}, IssuedAt: now.Add(-age), Source: "dcr"}
		if err := store.Put(context.Background(), c); err != nil {
			panic(err)
		}
	}

	// In production: a goroutine with a time.Ticker, daily.
	n, err := store.Prune(context.Background(), now.Add(-90*24*time.Hour))
	fmt.Println(n, err)
	_, err = store.Get(context.Background(), "dcr_old")
	fmt.Println(errors.Is(err, cimd.ErrUnknownClient))
	// Output:
	// 1 <nil>
	// true
}
