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
	if v, ok := s.take("b", later); !ok || v != 20 {
		t.Errorf("take = %d %v, want 20 true", v, ok)
	}
	if _, ok := s.take("b", later); ok {
		t.Errorf("take twice succeeded")
	}
	old, ok := s.update("c", later, func(v *int) { *v = 30 })
	if !ok || old != 3 {
		t.Errorf("update returned %d %v, want old value 3", old, ok)
	}
	if v, _ := s.update("c", later, nil); v != 30 {
		t.Errorf("after update = %d, want 30", v)
	}
	s.deleteFunc(func(v int) bool { return v == 30 })
	if s.len() != 0 {
		t.Errorf("len after deleteFunc = %d", s.len())
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
