package devas

import (
	"errors"
	"testing"
	"time"
)

func TestStoreBounds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newStore[int](2)
	if err := s.put("a", 1, t0.Add(time.Minute), t0); err != nil {
		t.Fatal(err)
	}
	if err := s.put("b", 2, t0.Add(time.Hour), t0); err != nil {
		t.Fatal(err)
	}
	if err := s.put("c", 3, t0.Add(time.Hour), t0); !errors.Is(err, errStoreFull) {
		t.Fatalf("put into a full store: err = %v, want errStoreFull", err)
	}
	if err := s.put("b", 20, t0.Add(time.Hour), t0); err != nil {
		t.Errorf("replacing in a full store: %v", err)
	}
	// Once "a" expires, it makes room.
	later := t0.Add(time.Minute)
	if err := s.put("c", 3, later.Add(time.Hour), later); err != nil {
		t.Fatalf("put after expiry: %v", err)
	}
	if s.len() != 2 {
		t.Errorf("len = %d, want 2", s.len())
	}
	if _, ok := s.update("a", later, nil); ok {
		t.Errorf("expired entry found")
	}
	if v, ok := s.update("b", later, nil); !ok || v != 20 {
		t.Errorf("update(nil) = %d %v, want 20 true", v, ok)
	}
	old, ok := s.update("c", later, func(v *int) { *v = 30 })
	if !ok || old != 3 {
		t.Errorf("update returned %d %v, want old value 3", old, ok)
	}
	if v, _ := s.update("c", later, nil); v != 30 {
		t.Errorf("after update = %d, want 30", v)
	}
}

// TestStoreAddEvict: addEvict is insert-if-absent and never refuses: a
// full store forgets expired entries, then the one expiring first.
func TestStoreAddEvict(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newStore[int](2)
	if !s.addEvict("a", 1, t0.Add(time.Minute), t0) || !s.addEvict("b", 2, t0.Add(2*time.Minute), t0) {
		t.Fatal("addEvict into a store with room failed")
	}
	if s.addEvict("a", 10, t0.Add(time.Hour), t0) {
		t.Error("addEvict replaced an unexpired entry")
	}
	if !s.addEvict("c", 3, t0.Add(3*time.Minute), t0) {
		t.Fatal("addEvict into a full store failed")
	}
	if _, ok := s.update("a", t0, nil); ok {
		t.Error("the entry expiring first was kept")
	}
	for _, k := range []string{"b", "c"} {
		if _, ok := s.update(k, t0, nil); !ok {
			t.Errorf("%s evicted", k)
		}
	}
	// An expired entry makes room, and its key can be added again.
	later := t0.Add(2 * time.Minute)
	if !s.addEvict("b", 20, later.Add(time.Minute), later) || s.len() != 2 {
		t.Errorf("re-adding an expired key: len %d", s.len())
	}
}

func TestParseLoginHint(t *testing.T) {
	tests := []struct {
		hint, sub, tenant string
		ok                bool
	}{
		{"alice@tenant-b", "alice", "tenant-b", true},
		{"bob", "bob", "def", true},
		{"a.b+c~d_e-f@t", "a.b+c~d_e-f", "t", true},
		{"@t", "", "", false},
		{"a@", "", "", false},
		{"a@b@c", "", "", false},
		{"a b@t", "", "", false},
		{string(make([]byte, 65)) + "@t", "", "", false},
	}
	for _, tt := range tests {
		sub, tenant, ok := parseLoginHint(tt.hint, "def")
		if sub != tt.sub || tenant != tt.tenant || ok != tt.ok {
			t.Errorf("parseLoginHint(%q) = %q %q %v, want %q %q %v", tt.hint, sub, tenant, ok, tt.sub, tt.tenant, tt.ok)
		}
	}
}
