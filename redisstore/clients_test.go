package redisstore_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/internal/clientrecord"
	"github.com/mcpguard/mcpguard/redisstore"
)

func TestClientStoreRoundTrip(t *testing.T) {
	_, rdb := newRedis(t)
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	s, err := redisstore.NewClientStore(redisstore.Config{Client: rdb, Timeout: testTimeout, ClientTTL: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	c := &cimd.Client{Document: cimd.Document{ClientID: "dcr_abc", RedirectURIs: []string{"http://127.0.0.1/cb"}}, IssuedAt: now, Source: "dcr"}
	c.SetSecret("s3cret")
	if err := s.Put(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "dcr_abc")
	if err != nil {
		t.Fatal(err)
	}
	if got.ClientID != "dcr_abc" || !got.IssuedAt.Equal(now) || got.Source != "dcr" || !(len(got.SecretSHA256) > 0) {
		t.Errorf("Get = %+v", got)
	}
	if ttl := rdb.PTTL(ctx, "mcpguard:client:dcr_abc").Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Errorf("PTTL = %v, want about 1h", ttl)
	}
	if raw := rdb.Get(ctx, "mcpguard:client:dcr_abc").Val(); strings.Contains(raw, "s3cret") {
		t.Error("the stored record holds the secret")
	}

	// A secret expiring sooner bounds the TTL; an expired one is refused.
	c2 := &cimd.Client{Document: cimd.Document{ClientID: "dcr_soon"}, SecretExpiresAt: now.Add(time.Minute)}
	if err := s.Put(ctx, c2); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, "mcpguard:client:dcr_soon").Val(); ttl > time.Minute {
		t.Errorf("PTTL = %v, want at most the secret's 1m", ttl)
	}
	c3 := &cimd.Client{Document: cimd.Document{ClientID: "dcr_old"}, SecretExpiresAt: now.Add(-time.Minute)}
	if err := s.Put(ctx, c3); !errors.Is(err, redisstore.ErrConfig) {
		t.Errorf("Put(expired secret) = %v", err)
	}

	// Long or odd ids are hashed, and still round-trip.
	long := "https://client.example/" + strings.Repeat("x", 300)
	if err := s.Put(ctx, &cimd.Client{Document: cimd.Document{ClientID: long}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, long); err != nil || got.ClientID != long {
		t.Errorf("Get(long) = %v, %v", got, err)
	}
	for _, k := range keysWithTTL(t, rdb) {
		if len(k) > len("mcpguard:client:")+128 {
			t.Errorf("key of %d bytes", len(k))
		}
	}

	if _, err := s.Get(ctx, "absent"); !errors.Is(err, cimd.ErrUnknownClient) {
		t.Errorf("Get(absent) = %v, want ErrUnknownClient", err)
	}
	rdb.Del(ctx, "mcpguard:client:dcr_abc") // what the TTL does in time
	if _, err := s.Get(ctx, "dcr_abc"); !errors.Is(err, cimd.ErrUnknownClient) {
		t.Errorf("Get after the key is gone = %v", err)
	}
	big := &cimd.Client{Document: cimd.Document{ClientID: "big", ClientName: strings.Repeat("n", clientrecord.MaxBytes)}}
	if err := s.Put(ctx, big); !errors.Is(err, cimd.ErrRecordTooLarge) {
		t.Errorf("Put(big) = %v, want ErrRecordTooLarge", err)
	}
	rdb.Set(ctx, "mcpguard:client:junk", "not json", time.Minute)
	if _, err := s.Get(ctx, "junk"); err == nil || !strings.HasPrefix(err.Error(), "redisstore: corrupt value") {
		t.Errorf("Get(junk) = %v, want a corrupt value error", err)
	}
}

// TestTwoRegistriesShareRegistrations: a client registered through the
// DCR endpoint of one authorization-server replica is found by the
// registry of another.
func TestTwoRegistriesShareRegistrations(t *testing.T) {
	_, rdb := newRedis(t)
	newReplica := func() (*cimd.DCRHandler, *cimd.Registry) {
		s, err := redisstore.NewClientStore(redisstore.Config{Client: rdb, Timeout: testTimeout})
		if err != nil {
			t.Fatal(err)
		}
		dcr, err := cimd.NewDCRHandler(cimd.DCRConfig{Store: s, IPRate: rate.Inf, GlobalRate: rate.Inf})
		if err != nil {
			t.Fatal(err)
		}
		reg, err := cimd.NewRegistry(cimd.RegistryConfig{Store: s})
		if err != nil {
			t.Fatal(err)
		}
		return dcr, reg
	}
	dcrA, _ := newReplica()
	_, regB := newReplica()

	req := httptest.NewRequest(http.MethodPost, "https://as.example/register", strings.NewReader(
		`{"client_name":"CLI","application_type":"native","redirect_uris":["http://127.0.0.1/callback"],"token_endpoint_auth_method":"client_secret_basic"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	dcrA.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	var reply struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil {
		t.Fatal(err)
	}
	c, err := regB.Lookup(t.Context(), reply.ClientID)
	if err != nil {
		t.Fatalf("replica B Lookup(%q) = %v", reply.ClientID, err)
	}
	if c.Source != "dcr" || !c.RedirectURIAllowed("http://127.0.0.1:8080/callback") {
		t.Errorf("replica B sees %+v", c)
	}
	if err := regB.VerifySecret(t.Context(), reply.ClientID, reply.ClientSecret); err != nil {
		t.Errorf("replica B VerifySecret = %v", err)
	}
	keysWithTTL(t, rdb)
}
