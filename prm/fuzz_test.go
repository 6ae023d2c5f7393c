package prm

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzMetadataJSON decodes arbitrary bytes as a metadata document and
// validates it: no panic, and a document that validates survives
// Marshal/Unmarshal unchanged (modulo empty vs absent lists) and still
// validates. Documents that validate are also served by Handler through an
// http.ServeMux at the paths Paths returns.
func FuzzMetadataJSON(f *testing.F) {
	for _, name := range []string{"full.json", "spec_tutorial.json", "offline_access.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"resource":"https://h"}`,
		`{"resource":"http://127.0.0.1:1/mcp","authorization_servers":["http://localhost"]}`,
		`{"resource":"https://h/mcp#","authorization_servers":["https://a"]}`,
		`{"resource":"https://h/\u0000","authorization_servers":["https://a"],"bearer_methods_supported":[]}`,
		`{"resource":"https://h","authorization_servers":["https://a"],"scopes_supported":["offline_access"]}`,
		`{"resource":"https://h//","authorization_servers":["https://a"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Metadata
		if json.Unmarshal(data, &m) != nil {
			return
		}
		if m.Validate() != nil {
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		var back Metadata
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("Unmarshal(Marshal): %v", err)
		}
		if !reflect.DeepEqual(emptyToNil(m), back) {
			t.Fatalf("round trip changed the document:\n got %#v\nwant %#v", back, m)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("round-tripped document no longer validates: %v", err)
		}
		if _, err := MetadataURL(m.Resource); err != nil {
			t.Fatalf("MetadataURL rejected a valid resource: %v", err)
		}
		h, herr := Handler(m)
		ins, root, perr := Paths(m.Resource)
		if perr != nil {
			// Valid, but not mountable (percent-encoding, "//").
			if !errors.Is(perr, ErrInvalidResource) || !errors.Is(herr, ErrInvalidResource) {
				t.Fatalf("Paths error %v, Handler error %v; want %v from both", perr, herr, ErrInvalidResource)
			}
			return
		}
		if herr != nil {
			t.Fatalf("Handler rejected a valid document: %v", herr)
		}
		// The paths must work as ServeMux patterns and reach the handler.
		mux := http.NewServeMux()
		mux.Handle(ins, h)
		if root != ins {
			mux.Handle(root, h)
		}
		for _, p := range []string{ins, root} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://h"+p, nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %q via ServeMux: status %d", p, rec.Code)
			}
		}
	})
}

// emptyToNil turns empty lists into nil, as omitempty does on the wire.
func emptyToNil(m Metadata) Metadata {
	for _, p := range []*[]string{
		&m.AuthorizationServers, &m.ScopesSupported, &m.BearerMethodsSupported,
		&m.ResourceSigningAlgValuesSupported, &m.AuthorizationDetailsTypesSupported,
		&m.DPoPSigningAlgValuesSupported,
	} {
		if len(*p) == 0 {
			*p = nil
		}
	}
	return m
}
