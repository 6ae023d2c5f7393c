package sessionowner

import (
	"fmt"
	"testing"

	"github.com/mcpguard/mcpguard/internal/deptest"
)

func TestOwners(t *testing.T) {
	o := New(2)
	o.Add("s1", "alice")
	o.Add("s2", "bob")
	if got, ok := o.Get("s1"); !ok || got != "alice" {
		t.Fatalf("Get(s1) = %q, %v, want alice, true", got, ok)
	}
	o.Add("s1", "carol") // replaces, does not grow
	if got, _ := o.Get("s1"); got != "carol" || o.Len() != 2 {
		t.Fatalf("after replace: Get(s1) = %q, Len = %d", got, o.Len())
	}
	o.Add("s3", "dave") // full: the oldest (s1) goes
	if _, ok := o.Get("s1"); ok {
		t.Error("s1 still known past the bound")
	}
	if got, ok := o.Get("s3"); !ok || got != "dave" {
		t.Errorf("Get(s3) = %q, %v", got, ok)
	}
	o.Remove("s2")
	if _, ok := o.Get("s2"); ok || o.Len() != 1 {
		t.Errorf("after Remove: known %v, Len %d", ok, o.Len())
	}
	if _, ok := o.Get("never"); ok {
		t.Error("unknown session known")
	}
}

func TestOwnersBounded(t *testing.T) {
	o := New(100)
	for i := range 1000 {
		o.Add(fmt.Sprint("s", i), "p")
	}
	if o.Len() != 100 {
		t.Errorf("Len = %d, want 100", o.Len())
	}
	if _, ok := o.Get("s999"); !ok {
		t.Error("newest session forgotten")
	}
}

// TestDeps: the standard library only.
func TestDeps(t *testing.T) {
	deptest.DepChecker{}.Check(t, ".")
}
