package fairlru

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestFloodEvictsOnlyTheFlooder: one partition adding 10x the bound never
// evicts the entries of partitions smaller than itself.
func TestFloodEvictsOnlyTheFlooder(t *testing.T) {
	for _, byExpiry := range []bool{false, true} {
		t.Run(fmt.Sprint("byExpiry=", byExpiry), func(t *testing.T) {
			const bound = 64
			c := New[string, int](Config{MaxEntries: bound, ByExpiry: byExpiry})
			for i := range 8 {
				if _, ok := c.Add("victim", fmt.Sprint("v", i), i, t0.Add(time.Hour), t0); !ok {
					t.Fatal("Add refused")
				}
			}
			for i := range 10 * bound {
				ev, ok := c.Add("flooder", fmt.Sprint("f", i), i, t0.Add(time.Duration(i)*time.Second+time.Minute), t0)
				if !ok {
					t.Fatalf("flood Add %d refused", i)
				}
				if ev != nil && ev.Partition != "flooder" {
					t.Fatalf("flood Add %d evicted %s of %s", i, ev.Key, ev.Partition)
				}
			}
			for i := range 8 {
				if c.Get(fmt.Sprint("v", i), t0) == nil {
					t.Errorf("victim entry v%d evicted", i)
				}
			}
			if c.Len() != bound || c.PartitionLen("flooder") != bound-8 {
				t.Errorf("Len %d, flooder %d; want %d, %d", c.Len(), c.PartitionLen("flooder"), bound, bound-8)
			}
		})
	}
}

// TestLargestPartitionLeaves: with three partitions, the largest loses an
// entry when a small one adds.
func TestLargestPartitionLeaves(t *testing.T) {
	c := New[string, int](Config{MaxEntries: 6})
	add := func(p, k string) *Entry[string, int] {
		t.Helper()
		ev, ok := c.Add(p, k, 0, time.Time{}, t0)
		if !ok {
			t.Fatalf("Add(%s, %s) refused", p, k)
		}
		return ev
	}
	for _, k := range []string{"a1", "a2", "a3", "a4"} {
		add("a", k)
	}
	add("b", "b1")
	add("c", "c1")
	if ev := add("b", "b2"); ev == nil || ev.Key != "a1" {
		t.Fatalf("evicted %v; want a1", ev)
	}
	// a2 is read: it gets a second chance, a3 leaves.
	c.Get("a2", t0)
	if ev := add("c", "c2"); ev == nil || ev.Key != "a3" {
		t.Fatalf("evicted %v; want a3", ev)
	}
}

func TestByExpiryEvictsFirstToExpire(t *testing.T) {
	c := New[string, int](Config{MaxEntries: 3, ByExpiry: true})
	c.Add("p", "late", 0, t0.Add(3*time.Minute), t0)
	c.Add("p", "early", 0, t0.Add(time.Minute), t0)
	c.Add("p", "mid", 0, t0.Add(2*time.Minute), t0)
	c.Get("early", t0) // no second chance by expiry
	ev, _ := c.Add("p", "new", 0, t0.Add(4*time.Minute), t0)
	if ev == nil || ev.Key != "early" {
		t.Fatalf("evicted %v; want early", ev)
	}
}

func TestKeepLast(t *testing.T) {
	c := New[string, int](Config{MaxEntries: 2, KeepLast: true, ByExpiry: true})
	c.Add("a", "a1", 0, t0.Add(time.Minute), t0)
	c.Add("b", "b1", 0, t0.Add(time.Minute), t0)
	if ev, ok := c.Add("c", "c1", 0, t0.Add(time.Minute), t0); ok || ev != nil {
		t.Fatalf("Add = %v, %v; want refused", ev, ok)
	}
	// Once a1 has expired, it makes room.
	if _, ok := c.Add("a", "a2", 0, t0.Add(2*time.Minute), t0.Add(time.Minute)); !ok {
		t.Fatal("Add after expiry refused")
	}
	if c.Peek("a1", t0) != nil || c.Len() != 2 {
		t.Fatalf("a1 kept, Len %d", c.Len())
	}
}

func TestExpiryAndRemove(t *testing.T) {
	c := New[string, int](Config{MaxEntries: 4})
	c.Add("p", "k", 1, t0.Add(time.Second), t0)
	if e := c.Get("k", t0); e == nil || e.Value != 1 {
		t.Fatalf("Get = %v", e)
	}
	if e := c.Get("k", t0.Add(time.Second)); e != nil || c.Len() != 0 {
		t.Fatalf("expired Get = %v, Len %d", e, c.Len())
	}
	c.Add("p", "k", 1, time.Time{}, t0)
	e := c.Get("k", t0)
	c.Add("q", "k", 2, time.Time{}, t0) // replaces, moves partition
	c.RemoveEntry(e)                    // stale: no effect
	if got := c.Get("k", t0); got == nil || got.Value != 2 || c.PartitionLen("p") != 0 {
		t.Fatalf("Get = %v, p holds %d", got, c.PartitionLen("p"))
	}
	c.Remove("k")
	if c.Len() != 0 || len(c.parts) != 0 || len(c.big) != 0 {
		t.Fatalf("not empty: %d %d %d", c.Len(), len(c.parts), len(c.big))
	}
}

// TestExpiredSinglesMakeRoom: with KeepLast, expired single entries of
// other partitions are dropped before Add gives up.
func TestExpiredSinglesMakeRoom(t *testing.T) {
	c := New[string, int](Config{MaxEntries: 3, KeepLast: true, ByExpiry: true})
	for i := range 3 {
		c.Add(fmt.Sprint("p", i), fmt.Sprint("k", i), 0, t0.Add(time.Minute), t0)
	}
	for i := range 3 {
		if _, ok := c.Add(fmt.Sprint("q", i), fmt.Sprint("n", i), 0, t0.Add(2*time.Minute), t0.Add(time.Minute)); !ok {
			t.Fatalf("Add %d refused", i)
		}
	}
	if c.Len() != 3 || len(c.exp) != 3 {
		t.Fatalf("Len %d, exp %d", c.Len(), len(c.exp))
	}
}

// TestTiesGoAgainstTheAdder: when the adding partition holds as many
// entries as the largest, it evicts its own.
func TestTiesGoAgainstTheAdder(t *testing.T) {
	c := New[string, int](Config{MaxEntries: 2})
	c.Add("victim", "v1", 0, time.Time{}, t0)
	c.Add("flooder", "f1", 0, time.Time{}, t0)
	for i := range 20 {
		ev, ok := c.Add("flooder", fmt.Sprint("f", i+2), 0, time.Time{}, t0)
		if !ok || ev == nil || ev.Partition != "flooder" {
			t.Fatalf("Add %d evicted %v, %v; want the flooder's own", i, ev, ok)
		}
	}
	if c.Peek("v1", t0) == nil {
		t.Fatal("victim evicted")
	}
}

// TestSubpartitionFloodEvictsOnlyTheFlooder: one subpartition of the
// largest partition adding 10x the bound never evicts the entries of the
// partition's other subpartitions, nor those of another partition.
func TestSubpartitionFloodEvictsOnlyTheFlooder(t *testing.T) {
	for _, byExpiry := range []bool{false, true} {
		t.Run(fmt.Sprint("byExpiry=", byExpiry), func(t *testing.T) {
			const bound = 64
			c := New[string, int](Config{MaxEntries: bound, ByExpiry: byExpiry})
			for i := range 4 {
				c.AddIn("client", fmt.Sprint("victim", i%2), fmt.Sprint("v", i), i, t0.Add(time.Minute), t0)
				c.Add("other", fmt.Sprint("o", i), i, t0.Add(time.Minute), t0)
			}
			// More of the client's principals, one entry each, added
			// after the victims: the client stays the largest partition.
			for i := range 8 {
				c.AddIn("client", fmt.Sprint("user", i), fmt.Sprint("u", i), i, t0.Add(time.Hour), t0)
			}
			for i := range 10 * bound {
				ev, ok := c.AddIn("client", "flooder", fmt.Sprint("f", i), i, t0.Add(time.Duration(i)*time.Second+2*time.Minute), t0)
				if !ok {
					t.Fatalf("flood Add %d refused", i)
				}
				if ev != nil && (ev.Partition != "client" || ev.Sub != "flooder") {
					t.Fatalf("flood Add %d evicted %s of %s/%s", i, ev.Key, ev.Partition, ev.Sub)
				}
			}
			for _, k := range []string{"v0", "v1", "v2", "v3", "o0", "o1", "o2", "o3", "u0", "u7"} {
				if c.Get(k, t0) == nil {
					t.Errorf("entry %s evicted", k)
				}
			}
			if c.Len() != bound || c.SubLen("client", "flooder") != bound-16 || c.PartitionLen("client") != bound-4 {
				t.Errorf("Len %d, flooder %d, client %d; want %d, %d, %d", c.Len(), c.SubLen("client", "flooder"), c.PartitionLen("client"), bound, bound-16, bound-4)
			}
			if c.SubLen("client", "victim0") != 2 || c.SubLen("client", "nobody") != 0 || c.SubLen("nobody", "") != 0 {
				t.Errorf("SubLen victim0 %d", c.SubLen("client", "victim0"))
			}
		})
	}
}

// TestSubpartitionTies: among a partition's subpartitions of one entry
// each, the entry of lowest rank leaves (as without subpartitions); the
// adding subpartition loses its own when it holds as many as the largest.
func TestSubpartitionTies(t *testing.T) {
	c := New[string, int](Config{MaxEntries: 4})
	for i := range 4 {
		c.AddIn("p", fmt.Sprint("s", i), fmt.Sprint("k", i), i, time.Time{}, t0)
	}
	c.Get("k0", t0) // a second chance: k1 is the oldest unread
	if ev, _ := c.AddIn("p", "new", "n1", 0, time.Time{}, t0); ev == nil || ev.Key != "k1" {
		t.Fatalf("evicted %v; want k1", ev)
	}
	// "new" holds one, as many as every other: it loses its own.
	if ev, _ := c.AddIn("p", "new", "n2", 0, time.Time{}, t0); ev == nil || ev.Key != "n1" {
		t.Fatalf("evicted %v; want n1", ev)
	}
	c.Remove("n2")
	c.Remove("k0")
	c.Remove("k2")
	c.Remove("k3")
	if c.Len() != 0 || len(c.parts) != 0 || len(c.subs) != 0 || len(c.big) != 0 {
		t.Fatalf("not empty: %d %d %d %d", c.Len(), len(c.parts), len(c.subs), len(c.big))
	}
}
