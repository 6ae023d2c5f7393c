package dpop

import (
	"errors"
	"testing"
	"time"
)

// TestNonces: with a NonceSecret, a proof needs the nonce of the current
// or the previous slot; any other value, or none, is Error "use_nonce". A
// replica with the same secret accepts it; one with another secret not.
func TestNonces(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	clock := now
	cfg := Config{NonceSecret: secret, NonceLifetime: time.Minute, Now: func() time.Time { return clock }}
	v := newTestVerifier(t, cfg)
	other := cfg
	other.NonceSecret = []byte("fedcba9876543210fedcba9876543210")
	w := newTestVerifier(t, other)
	replica := newTestVerifier(t, cfg)

	n := v.Nonce(clock)
	if len(n) != 32 || n != replica.Nonce(clock) || n == w.Nonce(clock) {
		t.Fatalf("nonce %q: want 32 characters, equal across replicas with one secret", n)
	}
	if got := newTestVerifier(t, Config{}).Nonce(clock); got != "" {
		t.Errorf("Nonce without secret = %q, want empty", got)
	}
	if got := newTestVerifier(t, Config{}).NextNonce(&Proof{}, clock); got != "" {
		t.Errorf("NextNonce without secret = %q, want empty", got)
	}
	for _, bad := range []string{"", "x", n + "A", "!" + n[1:]} {
		if got := v.NextNonce(&Proof{Nonce: bad}, clock); got != n {
			t.Errorf("NextNonce(%q) = %q, want the current %q", bad, got, n)
		}
	}
	proof := func(nonce any) string {
		s := goodSpec(t)
		s.claims["iat"] = clock.Unix()
		if nonce != nil {
			s.claims["nonce"] = nonce
		}
		return s.sign(t)
	}
	tests := []struct {
		name    string
		v       *Verifier
		nonce   any
		advance time.Duration
		wantErr error
	}{
		{"current", v, n, 0, nil},
		{"other replica", replica, n, 0, nil},
		{"previous slot", v, n, time.Minute, nil},
		{"two slots old", v, n, 2 * time.Minute, errUseNonce},
		{"missing", v, nil, 0, errUseNonce},
		{"empty", v, "", 0, errUseNonce},
		{"other secret", w, n, 0, errUseNonce},
		{"garbage", v, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 0, errUseNonce},
		{"number", v, 5, 0, errMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock = now.Add(tt.advance)
			defer func() { clock = now }()
			p, err := tt.v.Verify(bg, goodRequest(t, proof(tt.nonce)))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil {
				// A current nonce needs no new one; a previous slot's gets
				// the current slot's, to use with the next request.
				want := ""
				if tt.advance > 0 {
					want = tt.v.Nonce(clock)
				}
				if p.Nonce != tt.nonce {
					t.Errorf("Proof.Nonce = %q, want %q", p.Nonce, tt.nonce)
				}
				if got := tt.v.NextNonce(p, clock); got != want || (want != "" && got == n) {
					t.Errorf("NextNonce = %q, want %q", got, want)
				}
			}
			if tt.wantErr == errUseNonce && errors.Is(err, ErrInvalidProof) {
				t.Error("errUseNonce must not be ErrInvalidProof")
			}
		})
	}
}
