package cimd

import (
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestLimiterRefusalTakesNoToken(t *testing.T) {
	l := newLimiter(rate.Every(time.Hour), 1, rate.Every(time.Hour), 2, 10)
	if ok, _ := l.reserve("a", t0); !ok {
		t.Fatal("first reservation refused")
	}
	ok, wait := l.reserve("b", t0) // global bucket empty
	if ok || wait <= 0 || wait > time.Hour {
		t.Fatalf("reserve = %v, %v; want refusal with a wait of at most an hour", ok, wait)
	}
	b, _ := l.keyed.get("b")
	if got := b.TokensAt(t0); got != 2 {
		t.Errorf("refused key lost tokens: %v left, want 2", got)
	}
	if ok, _ := l.reserve("a", t0.Add(time.Hour)); !ok {
		t.Errorf("refill after an hour refused")
	}
}

func TestLRUEviction(t *testing.T) {
	c := newLRU[string, int](2)
	c.add("a", 1)
	c.add("b", 2)
	c.get("a") // b is now least recently used
	c.add("c", 3)
	if _, ok := c.get("b"); ok {
		t.Error("b survived eviction")
	}
	if v, ok := c.get("a"); !ok || v != 1 {
		t.Error("a was evicted")
	}
	c.add("a", 9)
	if v, _ := c.get("a"); v != 9 || c.len() != 2 {
		t.Errorf("update: got %d len %d", v, c.len())
	}
}
