// Package boltstore is the embedded, persistent cimd.Store: dynamic
// client registrations in one bbolt file. It is a package of its own so
// that importing cimd links no storage engine (bbolt, golang.org/x/sys).
//
//	store, err := boltstore.Open("/var/lib/as/clients.db")
//	if err != nil { … }
//	defer store.Close()
//	// cimd.DCRConfig{Store: store}, cimd.RegistryConfig{Store: store}
//
// One process holds the file. For several replicas of an authorization
// server, share registrations with redisstore.NewClientStore instead.
package boltstore
