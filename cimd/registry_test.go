package cimd

import (
	"context"
	"errors"
	"testing"
)

func TestRegistryLookup(t *testing.T) {
	s := newTLSServer(t, response{body: validDoc})
	res := mustResolver(t, testResolverConfig(s, newClock()))
	store := newMemoryStore()
	_ = store.Put(context.Background(), &Client{Document: Document{ClientID: "dcr_x", RedirectURIs: []string{"https://dcr.example/cb"}}})
	pinned := s.URL + "/pinned.json"
	static := []Client{
		{Document: Document{ClientID: "static-app", RedirectURIs: []string{"https://static.example/cb"}}, Source: sourceCIMD},
		{Document: Document{ClientID: pinned, ClientName: "Pinned", RedirectURIs: []string{"https://pinned.example/cb"}}},
	}
	static[0].SetSecret("static-secret")
	reg, err := NewRegistry(RegistryConfig{Resolver: res, Store: store, Static: static})
	wantErrs(t, err)
	static[0].RedirectURIs[0] = "https://evil.example/cb" // the registry made its own copy

	ctx := context.Background()
	tests := []struct {
		id         string
		wantSource string
		wantErr    error
	}{
		{"static-app", sourceStatic, nil},
		{pinned, sourceStatic, nil},
		{s.URL + "/client.json", sourceCIMD, nil},
		{"dcr_x", sourceDCR, nil},
		{"dcr_missing", "", ErrUnknownClient},
		{"", "", ErrUnknownClient},
		{"https://" + s.URL[len("https://"):] + "/a/../b", "", errNotClientIDURL},
		{"https://10.0.0.1/client.json", "", errForbiddenAddress},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			c, err := reg.Lookup(ctx, tt.id)
			if tt.wantErr != nil {
				wantErrs(t, err, tt.wantErr)
				return
			}
			wantErrs(t, err)
			if c.Source != tt.wantSource || c.ClientID != tt.id {
				t.Errorf("got %s %q, want %s", c.Source, c.ClientID, tt.wantSource)
			}
		})
	}
	if s.hits.Load() != 1 {
		t.Errorf("document server hits = %d, want 1 (pinned id must not be fetched)", s.hits.Load())
	}
	c, _ := reg.Lookup(ctx, "static-app")
	if c.RedirectURIs[0] != "https://static.example/cb" {
		t.Errorf("static client changed through the caller's slice")
	}
	c.RedirectURIs[0] = "https://evil.example/cb"
	if c2, _ := reg.Lookup(ctx, "static-app"); c2.RedirectURIs[0] != "https://static.example/cb" {
		t.Errorf("static client changed through a returned client")
	}
	wantErrs(t, reg.VerifySecret(ctx, "static-app", "static-secret"))
	wantErrs(t, reg.VerifySecret(ctx, s.URL+"/client.json", ""), errInvalidSecret)
}

func TestRegistrySourcesOff(t *testing.T) {
	reg, err := NewRegistry(RegistryConfig{})
	wantErrs(t, err)
	for _, id := range []string{"https://app.example.com/client.json", "dcr_x", "x"} {
		_, err := reg.Lookup(context.Background(), id)
		wantErrs(t, err, ErrUnknownClient)
	}
}

func TestNewRegistryConfigErrors(t *testing.T) {
	for name, static := range map[string][]Client{
		"empty id":     {{}},
		"duplicate id": {{Document: Document{ClientID: "a"}}, {Document: Document{ClientID: "a"}}},
		"bad redirect": {{Document: Document{ClientID: "a", RedirectURIs: []string{"javascript:alert(1)"}}}},
		"web loopback": {{Document: Document{ClientID: "a", ApplicationType: "web", RedirectURIs: []string{"http://127.0.0.1/cb"}}}},
	} {
		if _, err := NewRegistry(RegistryConfig{Static: static}); !errors.Is(err, errConfig) {
			t.Errorf("%s: err = %v, want errConfig", name, err)
		}
	}
}
