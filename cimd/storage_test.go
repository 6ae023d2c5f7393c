package cimd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// TestJWKSNeedsPrivateKeyJWT: jwks and jwks_uri are refused unless the
// client authenticates with private_key_jwt, in Client ID Metadata
// Documents, dynamic registrations and static clients alike (a public
// client could otherwise park up to a request body of key material).
func TestJWKSNeedsPrivateKeyJWT(t *testing.T) {
	const (
		jwks    = `"jwks":{"keys":[{"kty":"EC","crv":"P-256","x":"<&>","y":"y"}]}`
		jwksURI = `"jwks_uri":"https://a.example/jwks.json"`
		cb      = `"redirect_uris":["https://a.example/cb"]`
	)
	dcrPol := policy{
		defaultAppType:    appTypeWeb,
		defaultAuthMethod: authMethodClientSecretBasic,
		authMethods:       []string{authMethodNone, authMethodClientSecretBasic, authMethodClientSecretPost, authMethodPrivateKeyJWT},
	}
	tests := []struct {
		name    string
		source  string // cimd or dcr
		members string
		ok      bool
	}{
		{"cimd jwks, method none", "cimd", `"token_endpoint_auth_method":"none",` + jwks, false},
		{"cimd jwks, method absent (none)", "cimd", jwks, false},
		{"cimd jwks_uri, method none", "cimd", `"token_endpoint_auth_method":"none",` + jwksURI, false},
		{"cimd jwks_uri, method absent (none)", "cimd", jwksURI, false},
		{"cimd jwks, private_key_jwt", "cimd", `"token_endpoint_auth_method":"private_key_jwt",` + jwks, true},
		{"cimd jwks_uri, private_key_jwt", "cimd", `"token_endpoint_auth_method":"private_key_jwt",` + jwksURI, true},
		{"dcr jwks, method none", "dcr", `"token_endpoint_auth_method":"none",` + jwks, false},
		{"dcr jwks, method absent (client_secret_basic)", "dcr", jwks, false},
		{"dcr jwks, client_secret_post", "dcr", `"token_endpoint_auth_method":"client_secret_post",` + jwks, false},
		{"dcr jwks_uri, client_secret_basic", "dcr", `"token_endpoint_auth_method":"client_secret_basic",` + jwksURI, false},
		{"dcr jwks_uri, method none", "dcr", `"token_endpoint_auth_method":"none",` + jwksURI, false},
		{"dcr jwks, private_key_jwt", "dcr", `"token_endpoint_auth_method":"private_key_jwt",` + jwks, true},
		{"dcr jwks_uri, private_key_jwt", "dcr", `"token_endpoint_auth_method":"private_key_jwt",` + jwksURI, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.source == "cimd" {
				_, err = parseDocument([]byte(`{"client_id":"`+specURL+`","client_name":"x",`+cb+`,`+tt.members+`}`), specURL, cimdPolicy(false))
				if !tt.ok {
					wantErrs(t, err, errInvalidDocument, errInvalidClientMetadata)
					return
				}
			} else {
				_, err = parseDCRRequest([]byte(`{`+cb+`,`+tt.members+`}`), dcrPol)
				if !tt.ok {
					wantErrs(t, err, errInvalidClientMetadata)
					return
				}
			}
			wantErrs(t, err)
		})
	}
	t.Run("static client jwks_uri, method none", func(t *testing.T) {
		c := Client{Document: Document{ClientID: "s", RedirectURIs: []string{"https://a.example/cb"},
			TokenEndpointAuthMethod: authMethodNone, JWKSURI: "https://a.example/jwks.json"}}
		_, err := NewRegistry(RegistryConfig{Static: []Client{c}})
		wantErrs(t, err, errConfig, errInvalidClientMetadata)
	})
}

// TestDCRStoredRecordNotAmplified: what an unauthenticated registration
// leaves in a store (the record cimd/boltstore writes: encodeRecord) is no larger than the request plus the fields
// the server adds. Before the fix, '<', '>' and '&' were stored as
// \u003c… (six bytes for one), so a 16 KiB request of jwks padding
// became a 97 KB record.
func TestDCRStoredRecordNotAmplified(t *testing.T) {
	const overhead = 512 // client_id, issued_at, source, filled-in defaults
	pad := func(n int) string { return strings.Repeat("<&>", n/3) }
	tests := []struct {
		name string
		body string
	}{
		{"jwks of <&> (private_key_jwt)", fmt.Sprintf(`{"redirect_uris":["https://c.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":{"keys":[{"kty":"EC","x":%q}]}}`, pad(defaultMaxBodyBytes-300))},
		{"scope of <&>", fmt.Sprintf(`{"redirect_uris":["https://c.example/cb"],"token_endpoint_auth_method":"none","scope":%q}`, pad(maxScopeBytes))},
		{"client_name and contacts of <&>", fmt.Sprintf(`{"redirect_uris":["https://c.example/cb"],"token_endpoint_auth_method":"none","client_name":%q,"contacts":[%q,%q,%q]}`,
			pad(maxNameBytes), pad(maxNameBytes), pad(maxNameBytes), pad(maxNameBytes))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.body) > defaultMaxBodyBytes {
				t.Fatalf("body is %d bytes, over the default cap", len(tt.body))
			}
			bs := &recordingStore{memoryStore: newMemoryStore(), records: map[string][]byte{}}
			h, err := NewDCRHandler(DCRConfig{Store: bs, IPRate: rate.Inf, GlobalRate: rate.Inf,
				AuthMethods: []string{authMethodNone, authMethodPrivateKeyJWT}})
			wantErrs(t, err)
			f := &dcrFixture{h: h}
			rec := f.post(tt.body, "application/json", "")
			if rec.Code != http.StatusCreated {
				t.Fatalf("status %d %s", rec.Code, rec.Body)
			}
			id := decodeReply(t, rec).ClientID
			stored := bs.records[id]
			if len(stored) == 0 || len(stored) > len(tt.body)+overhead {
				t.Errorf("request of %d bytes stored as %d bytes (want at most %d)", len(tt.body), len(stored), len(tt.body)+overhead)
			}
			if strings.Contains(string(stored), `\u003c`) || strings.Contains(string(stored), `\u0026`) {
				t.Errorf("stored record is HTML-escaped: %.200s…", stored)
			}
			// What is stored reads back unchanged.
			c, err := bs.Get(context.Background(), id)
			wantErrs(t, err)
			var sent map[string]json.RawMessage
			_ = json.Unmarshal([]byte(tt.body), &sent)
			if raw, ok := sent["jwks"]; ok && string(c.JWKS) != string(raw) {
				t.Errorf("jwks changed: %.80s… != %.80s…", c.JWKS, raw)
			}
			if raw, ok := sent["scope"]; ok {
				var s string
				_ = json.Unmarshal(raw, &s)
				if c.Scope != s {
					t.Errorf("scope changed")
				}
			}
		})
	}
}

// TestDCRJWKSWithPublicClientRefused is the reviewer's reproduction: a
// 16 KiB public-client registration padded inside jwks is refused and
// leaves nothing in the store.
func TestDCRJWKSWithPublicClientRefused(t *testing.T) {
	f := newDCR(t, nil)
	pad := strings.Repeat("<", defaultMaxBodyBytes-300)
	body := fmt.Sprintf(`{"redirect_uris":["https://c.example/cb"],"token_endpoint_auth_method":"none","jwks":{"keys":[{"kty":"EC","x":%q}]}}`, pad)
	rec := f.post(body, "application/json", "192.0.2.1:1")
	if r := decodeReply(t, rec); rec.Code != http.StatusBadRequest || r.Error != "invalid_client_metadata" {
		t.Fatalf("got %d %q, want 400 invalid_client_metadata", rec.Code, r.Error)
	}
	if len(f.store.m) != 0 {
		t.Errorf("store has %d clients after a refusal", len(f.store.m))
	}
}

// recordingStore is a memoryStore that keeps the stored form of each
// client, as a persistent store writes it.
type recordingStore struct {
	*memoryStore
	records map[string][]byte
}

func (s *recordingStore) Put(ctx context.Context, c *Client) error {
	v, err := encodeRecord(c)
	if err != nil {
		return err
	}
	s.records[c.ClientID] = v
	return s.memoryStore.Put(ctx, c)
}

// storesUnderTest returns a fresh memoryStore (cimd/boltstore tests its
// own store the same way).
func storesUnderTest(t *testing.T) map[string]interface {
	Store
	Prune(context.Context, time.Time) (int, error)
} {
	t.Helper()
	return map[string]interface {
		Store
		Prune(context.Context, time.Time) (int, error)
	}{"memory": newMemoryStore()}
}

// clientWithJWKS returns sampleClient with a jwks whose stored record is
// exactly size bytes.
func clientWithJWKS(t *testing.T, size int) *Client {
	t.Helper()
	c := sampleClient()
	c.JWKS = json.RawMessage(`{"keys":[{"kty":"EC","x":""}]}`)
	v, err := marshalNoEscape(c)
	wantErrs(t, err)
	c.JWKS = json.RawMessage(`{"keys":[{"kty":"EC","x":"` + strings.Repeat("<", size-len(v)) + `"}]}`)
	if v, _ := marshalNoEscape(c); len(v) != size {
		t.Fatalf("record is %d bytes, want %d", len(v), size)
	}
	return c
}

// TestStoresRecordCap: both stores refuse a client whose stored form is
// over maxRecordBytes with ErrRecordTooLarge and keep what they had.
func TestStoresRecordCap(t *testing.T) {
	ctx := context.Background()
	for name, s := range storesUnderTest(t) {
		t.Run(name, func(t *testing.T) {
			atCap := clientWithJWKS(t, maxRecordBytes)
			wantErrs(t, s.Put(ctx, atCap))
			over := clientWithJWKS(t, maxRecordBytes+1)
			wantErrs(t, s.Put(ctx, over), ErrRecordTooLarge)
			got, err := s.Get(ctx, atCap.ClientID)
			wantErrs(t, err)
			if string(got.JWKS) != string(atCap.JWKS) {
				t.Error("a refused Put replaced the stored client")
			}
			over.ClientID = "dcr_other"
			wantErrs(t, s.Put(ctx, over), ErrRecordTooLarge)
			_, err = s.Get(ctx, "dcr_other")
			wantErrs(t, err, ErrUnknownClient)
		})
	}
}

// TestStoresPrune: Prune removes registrations issued before the cutoff,
// keeps later ones and clients without IssuedAt, and honours ctx.
func TestStoresPrune(t *testing.T) {
	ctx := context.Background()
	for name, s := range storesUnderTest(t) {
		t.Run(name, func(t *testing.T) {
			issued := map[string]time.Time{
				"dcr_old1":  t0.Add(-48 * time.Hour),
				"dcr_old2":  t0.Add(-24*time.Hour - time.Second),
				"dcr_edge":  t0.Add(-24 * time.Hour), // not before the cutoff
				"dcr_new":   t0,
				"no_issued": {},
			}
			for id, at := range issued {
				c := sampleClient()
				c.ClientID, c.IssuedAt = id, at
				wantErrs(t, s.Put(ctx, c))
			}
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			if n, err := s.Prune(cancelled, t0); !errors.Is(err, context.Canceled) || n != 0 {
				t.Errorf("Prune with a cancelled context = %d, %v", n, err)
			}
			if _, err := s.Get(ctx, "dcr_old1"); err != nil {
				t.Errorf("a cancelled Prune removed a client: %v", err)
			}
			n, err := s.Prune(ctx, t0.Add(-24*time.Hour))
			wantErrs(t, err)
			if n != 2 {
				t.Errorf("Prune removed %d, want 2", n)
			}
			for id := range issued {
				_, err := s.Get(ctx, id)
				if gone := strings.HasPrefix(id, "dcr_old"); gone != errors.Is(err, ErrUnknownClient) {
					t.Errorf("%s: Get after Prune = %v", id, err)
				}
			}
			if n, err := s.Prune(ctx, t0.Add(-24*time.Hour)); err != nil || n != 0 {
				t.Errorf("second Prune = %d, %v, want 0", n, err)
			}
		})
	}
}

// TestClientMarshalJSONNotEscaped: the stored form keeps '<', '>', '&'
// as one byte each and round-trips byte for byte; json.Marshal (which
// escapes again) still decodes to the same client.
func TestClientMarshalJSONNotEscaped(t *testing.T) {
	d, err := parseDocument([]byte(`{"client_id":"`+specURL+`","client_name":"a<b>&c","redirect_uris":["https://a.example/cb"],`+
		`"token_endpoint_auth_method":"private_key_jwt","jwks": { "keys" : [ {"kty":"EC","x":"<&>\u003c"} ] } }`), specURL, cimdPolicy(false))
	wantErrs(t, err)
	if want := `{"keys":[{"kty":"EC","x":"<&>\u003c"}]}`; string(d.JWKS) != want {
		t.Errorf("jwks = %s, want %s (compact, as sent)", d.JWKS, want)
	}
	c := &Client{Document: *d, IssuedAt: t0, Source: sourceDCR}
	c.SetSecret("s3cret")
	b, err := marshalNoEscape(c)
	wantErrs(t, err)
	if !strings.Contains(string(b), `"client_name":"a<b>&c"`) || !strings.Contains(string(b), `"x":"<&>\u003c"`) {
		t.Errorf("MarshalJSON escaped: %s", b)
	}
	var back Client
	wantErrs(t, json.Unmarshal(b, &back))
	b2, err := marshalNoEscape(back)
	wantErrs(t, err)
	if string(b2) != string(b) {
		t.Errorf("not stable:\n%s\n%s", b, b2)
	}
	escaped, err := json.Marshal(c)
	wantErrs(t, err)
	var viaMarshal Client
	wantErrs(t, json.Unmarshal(escaped, &viaMarshal))
	var j1, j2 any
	_ = json.Unmarshal(viaMarshal.JWKS, &j1)
	_ = json.Unmarshal(c.JWKS, &j2)
	if viaMarshal.ClientName != c.ClientName || fmt.Sprint(j1) != fmt.Sprint(j2) || !viaMarshal.secretMatches("s3cret") {
		t.Errorf("json.Marshal round trip = %+v", viaMarshal)
	}
}

// TestDCRRecordTooLarge: a registration whose stored form is over
// maxRecordBytes (reachable only with a raised MaxBodyBytes) is a 400
// invalid_client_metadata, not a 500, and nothing is stored.
func TestDCRRecordTooLarge(t *testing.T) {
	f := newDCR(t, func(c *DCRConfig) { c.MaxBodyBytes = 4 * maxRecordBytes })
	var uris []string
	for i := range maxRedirectURIs {
		uris = append(uris, fmt.Sprintf("https://app.example/%02d/%s", i, strings.Repeat("p", 1980)))
	}
	rec := f.post(`{"token_endpoint_auth_method":"none","redirect_uris":["`+strings.Join(uris, `","`)+`"]}`, "application/json", "")
	r := decodeReply(t, rec)
	if rec.Code != http.StatusBadRequest || r.Error != "invalid_client_metadata" || r.ErrorDescription != "the client metadata is too large" {
		t.Errorf("got %d %q %q", rec.Code, r.Error, r.ErrorDescription)
	}
	if len(f.store.m) != 0 {
		t.Errorf("store has %d clients", len(f.store.m))
	}
	// Half as many URIs fit.
	rec = f.post(`{"token_endpoint_auth_method":"none","redirect_uris":["`+strings.Join(uris[:maxRedirectURIs/2], `","`)+`"]}`, "application/json", "")
	if rec.Code != http.StatusCreated {
		t.Errorf("half the URIs: %d %s", rec.Code, rec.Body)
	}
}
