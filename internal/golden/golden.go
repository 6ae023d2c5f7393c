package golden

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden files")

// Check fails t if got differs from the contents of testdata/name. With
// -update it writes got to testdata/name instead, and compares nothing.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s (run go test -update to create it)", err.Error())
	}
	if string(got) != string(want) {
		t.Errorf("%s mismatch (-update to accept)\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

// DumpResponse formats a recorded response for a golden file: the status
// line, the header fields sorted by name (each value on its own line), a
// blank line, and the body followed by a newline.
func DumpResponse(rec *httptest.ResponseRecorder) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "status: %d %s\n", rec.Code, http.StatusText(rec.Code))
	keys := make([]string, 0, len(rec.Header()))
	for k := range rec.Header() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range rec.Header()[k] {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	b.WriteString("\n")
	b.WriteString(rec.Body.String())
	b.WriteString("\n")
	return []byte(b.String())
}
