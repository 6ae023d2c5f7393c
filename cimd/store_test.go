package cimd

import (
	"context"
	"encoding/json"
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
			TokenEndpointAuthMethod: authMethodClientSecretPost,
			JWKS:                    json.RawMessage(`{"keys":[{"kty":"EC"}]}`),
		},
		IssuedAt:        t0,
		SecretExpiresAt: t0.Add(time.Hour),
		Source:          sourceDCR,
	}
	c.SetSecret("s3cret")
	return c
}

// TestStores: cimd/boltstore and redisstore run the same checks on theirs.
func TestStores(t *testing.T) {
	for name, s := range map[string]interface {
		Store
		Delete(context.Context, string) error
	}{"memory": newMemoryStore()} {
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
