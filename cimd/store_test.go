package cimd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func sampleClient() *Client {
	c := &Client{
		Document: Document{
			ClientID:                "dcr_abc",
			ClientName:              "Stored",
			RedirectURIs:            []string{"https://app.example/cb"},
			GrantTypes:              []string{"authorization_code"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: AuthMethodClientSecretPost,
			JWKS:                    json.RawMessage(`{"keys":[{"kty":"EC"}]}`),
		},
		IssuedAt:        t0,
		SecretExpiresAt: t0.Add(time.Hour),
		Source:          SourceDCR,
	}
	c.SetSecret("s3cret")
	return c
}

func TestStores(t *testing.T) {
	bolt, err := NewBoltStore(filepath.Join(t.TempDir(), "clients.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bolt.Close() })
	for name, s := range map[string]interface {
		Store
		Delete(context.Context, string) error
	}{"memory": NewMemoryStore(), "bolt": bolt} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			_, err := s.Get(ctx, "dcr_abc")
			wantErrs(t, err, ErrUnknownClient)
			want := sampleClient()
			wantErrs(t, s.Put(ctx, want))
			got, err := s.Get(ctx, "dcr_abc")
			wantErrs(t, err)
			assertSameClient(t, got, want)
			got.RedirectURIs[0] = "https://evil.example/cb"
			again, _ := s.Get(ctx, "dcr_abc")
			if again.RedirectURIs[0] != "https://app.example/cb" {
				t.Error("store returned shared state")
			}
			wantErrs(t, s.Delete(ctx, "dcr_abc"))
			_, err = s.Get(ctx, "dcr_abc")
			wantErrs(t, err, ErrUnknownClient)
		})
	}
}

func assertSameClient(t *testing.T, got, want *Client) {
	t.Helper()
	if got.ClientID != want.ClientID || got.ClientName != want.ClientName || !slices.Equal(got.RedirectURIs, want.RedirectURIs) ||
		got.TokenEndpointAuthMethod != want.TokenEndpointAuthMethod || string(got.JWKS) != string(want.JWKS) ||
		!got.IssuedAt.Equal(want.IssuedAt) || !got.SecretExpiresAt.Equal(want.SecretExpiresAt) || got.Source != want.Source {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if !got.secretMatches("s3cret") || got.secretMatches("s3cret!") {
		t.Error("secret hash did not survive")
	}
}

func TestBoltStoreSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.db")
	s, err := NewBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	wantErrs(t, s.Put(context.Background(), sampleClient()))
	wantErrs(t, s.Close())

	s, err = NewBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Get(context.Background(), "dcr_abc")
	wantErrs(t, err)
	assertSameClient(t, got, sampleClient())

	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), "s3cret") {
		t.Error("the bolt file holds the plaintext secret")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, want 0600", fi.Mode().Perm())
	}
}

func TestBoltStoreLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.db")
	s, err := NewBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	if _, err := NewBoltStore(path); err == nil {
		t.Fatal("opened a file another handle holds")
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("waited %v for the lock", el)
	}
}

func TestClientJSONRoundTrip(t *testing.T) {
	c := sampleClient()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cret") || !strings.Contains(string(b), `"secret_sha256"`) || !strings.Contains(string(b), `"client_id":"dcr_abc"`) {
		t.Errorf("json = %s", b)
	}
	var got Client
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	assertSameClient(t, &got, c)
}
