package cimd

import (
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestLimiterRefusalTakesNoToken(t *testing.T) {
	l := newLimiter(rate.Every(time.Hour), 1, rate.Every(time.Hour), 2, 10, ipPartition)
	if ok, _ := l.reserve("a", t0); !ok {
		t.Fatal("first reservation refused")
	}
	ok, wait := l.reserve("b", t0) // global bucket empty
	if ok || wait <= 0 || wait > time.Hour {
		t.Fatalf("reserve = %v, %v; want refusal with a wait of at most an hour", ok, wait)
	}
	b, _ := l.buckets("b", t0)
	if got := b.TokensAt(t0); got != 2 {
		t.Errorf("refused key lost tokens: %v left, want 2", got)
	}
	// a's partition bucket refills at half the global rate.
	if ok, _ := l.reserve("a", t0.Add(2*time.Hour)); !ok {
		t.Errorf("refill after two hours refused")
	}
}
