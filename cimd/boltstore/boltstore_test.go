package boltstore

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"golang.org/x/time/rate"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/internal/clientrecord"
	"github.com/mcpguard/mcpguard/internal/deptest"
)

var t0 = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

// TestDeps: bbolt is linked here and only here.
func TestDeps(t *testing.T) {
	deptest.DepChecker{
		Direct:  true,
		Allowed: []string{deptest.Module + "/cimd", deptest.Module + "/internal/clientrecord", "go.etcd.io/bbolt"},
	}.Check(t, ".")
}

func sampleClient() *cimd.Client {
	c := &cimd.Client{
		Document: cimd.Document{
			ClientID:                "dcr_abc",
			ClientName:              "Stored",
			RedirectURIs:            []string{"https://app.example/cb"},
			GrantTypes:              []string{"authorization_code"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "client_secret_post",
			JWKS:                    json.RawMessage(`{"keys":[{"kty":"EC"}]}`),
		},
		IssuedAt:        t0,
		SecretExpiresAt: t0.Add(time.Hour),
		Source:          "dcr",
	}
	c.SetSecret("s3cret")
	return c
}

func open(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "clients.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func assertSameClient(t *testing.T, got, want *cimd.Client) {
	t.Helper()
	if got.ClientID != want.ClientID || got.ClientName != want.ClientName || !slices.Equal(got.RedirectURIs, want.RedirectURIs) ||
		got.TokenEndpointAuthMethod != want.TokenEndpointAuthMethod || string(got.JWKS) != string(want.JWKS) ||
		!got.IssuedAt.Equal(want.IssuedAt) || !got.SecretExpiresAt.Equal(want.SecretExpiresAt) || got.Source != want.Source ||
		!(len(got.SecretSHA256) > 0) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestStore(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	if _, err := s.Get(ctx, "dcr_abc"); !errors.Is(err, cimd.ErrUnknownClient) {
		t.Fatalf("Get(absent) = %v", err)
	}
	want := sampleClient()
	if err := s.Put(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "dcr_abc")
	if err != nil {
		t.Fatal(err)
	}
	assertSameClient(t, got, want)
	got.RedirectURIs[0] = "https://evil.example/cb"
	if again, _ := s.Get(ctx, "dcr_abc"); again.RedirectURIs[0] != "https://app.example/cb" {
		t.Error("store returned shared state")
	}
	if n, err := s.Prune(ctx, t0.Add(time.Second)); n != 1 || err != nil {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if _, err := s.Get(ctx, "dcr_abc"); !errors.Is(err, cimd.ErrUnknownClient) {
		t.Errorf("Get after Prune = %v", err)
	}
}

func TestSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), sampleClient()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Get(context.Background(), "dcr_abc")
	if err != nil {
		t.Fatal(err)
	}
	assertSameClient(t, got, sampleClient())
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), "s3cret") {
		t.Error("the bolt file holds the plaintext secret")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, want 0600", fi.Mode().Perm())
	}
}

// TestLocked: Open of a file another handle holds gives up after its
// one-second lock timeout (bbolt's ErrTimeout), not at once for another
// reason and not after waiting on. The wait is compared with a baseline
// from the same run, never with the wall clock alone: the worst of
// sleepers of one second run alongside, which a loaded machine delays
// alike; it may take 2 s more than that, or 3 times it, whichever is
// larger.
func TestLocked(t *testing.T) {
	_, path := open(t)
	const sleepers = 4
	base := make(chan time.Duration, sleepers)
	for range sleepers {
		go func() {
			start := time.Now()
			time.Sleep(time.Second)
			base <- time.Since(start)
		}()
	}
	start := time.Now()
	_, err := Open(path)
	el := time.Since(start)
	if !errors.Is(err, berrors.ErrTimeout) {
		t.Fatalf("Open of a file another handle holds = %v, want %v", err, berrors.ErrTimeout)
	}
	var b time.Duration
	for range sleepers {
		b = max(b, <-base)
	}
	t.Logf("waited %v for the lock (baseline %v)", el, b)
	if el > max(b+2*time.Second, 3*b) {
		t.Errorf("waited %v for the lock, want about the 1 s timeout (baseline %v)", el, b)
	}
}

// TestRecordCap: a client whose stored form is over clientrecord.MaxBytes
// is refused with ErrRecordTooLarge and the store keeps what it had.
func TestRecordCap(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	withJWKS := func(size int) *cimd.Client {
		c := sampleClient()
		c.JWKS = json.RawMessage(`{"keys":[{"kty":"EC","x":""}]}`)
		v, _ := clientrecord.Marshal(c)
		c.JWKS = json.RawMessage(`{"keys":[{"kty":"EC","x":"` + strings.Repeat("<", size-len(v)) + `"}]}`)
		return c
	}
	atCap := withJWKS(clientrecord.MaxBytes)
	if err := s.Put(ctx, atCap); err != nil {
		t.Fatal(err)
	}
	over := withJWKS(clientrecord.MaxBytes + 1)
	if err := s.Put(ctx, over); !errors.Is(err, cimd.ErrRecordTooLarge) {
		t.Errorf("Put(over) = %v", err)
	}
	if got, _ := s.Get(ctx, atCap.ClientID); string(got.JWKS) != string(atCap.JWKS) {
		t.Error("a refused Put replaced the stored client")
	}
}

// TestPrune removes registrations issued before the cutoff, keeps later
// ones and clients without IssuedAt, and honours ctx.
func TestPrune(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	issued := map[string]time.Time{
		"dcr_old1":  t0.Add(-48 * time.Hour),
		"dcr_old2":  t0.Add(-24*time.Hour - time.Second),
		"dcr_edge":  t0.Add(-24 * time.Hour),
		"dcr_new":   t0,
		"no_issued": {},
	}
	for id, at := range issued {
		c := sampleClient()
		c.ClientID, c.IssuedAt = id, at
		if err := s.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if n, err := s.Prune(cancelled, t0); !errors.Is(err, context.Canceled) || n != 0 {
		t.Errorf("Prune with a cancelled context = %d, %v", n, err)
	}
	n, err := s.Prune(ctx, t0.Add(-24*time.Hour))
	if err != nil || n != 2 {
		t.Errorf("Prune = %d, %v; want 2", n, err)
	}
	for id := range issued {
		_, err := s.Get(ctx, id)
		if gone := strings.HasPrefix(id, "dcr_old"); gone != errors.Is(err, cimd.ErrUnknownClient) {
			t.Errorf("%s: Get after Prune = %v", id, err)
		}
	}
}

// TestDCRRecordIsMarshalJSON: what a registration leaves in the file is
// exactly Client.MarshalJSON (compact, not HTML-escaped), so a 16 KiB
// request of '<' padding is not stored as six bytes per '<'.
func TestDCRRecordIsMarshalJSON(t *testing.T) {
	s, _ := open(t)
	h, err := cimd.NewDCRHandler(cimd.DCRConfig{Store: s, IPRate: rate.Inf, GlobalRate: rate.Inf,
		AuthMethods: []string{"none", "private_key_jwt"}})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"redirect_uris":["https://c.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":{"keys":[{"kty":"EC","x":"` +
		strings.Repeat("<&>", 5000) + `"}]}}`
	req := httptest.NewRequest(http.MethodPost, "https://as.example/register", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("status %d %s", rec.Code, rec.Body)
	}
	var reply struct {
		ClientID string `json:"client_id"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &reply)
	var stored []byte
	_ = s.db.View(func(tx *bolt.Tx) error {
		stored = append(stored, tx.Bucket(boltBucket).Get([]byte(reply.ClientID))...)
		return nil
	})
	c, err := s.Get(context.Background(), reply.ClientID)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := clientrecord.Marshal(c)
	if string(stored) != string(want) || len(stored) > len(body)+512 {
		t.Errorf("stored %d bytes, MarshalJSON %d, request %d", len(stored), len(want), len(body))
	}
}
