package golden

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestDumpResponse pins the format that every golden response file of the
// module is written in.
func TestDumpResponse(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Add("WWW-Authenticate", `Bearer error="invalid_token"`)
	rec.Header().Add("WWW-Authenticate", `Basic realm="x"`)
	rec.Header().Set("Content-Type", "application/json")
	rec.WriteHeader(http.StatusUnauthorized)
	rec.Body.WriteString(`{"error":"invalid_token"}`)
	const want = "status: 401 Unauthorized\n" +
		"Content-Type: application/json\n" +
		"Www-Authenticate: Bearer error=\"invalid_token\"\n" +
		"Www-Authenticate: Basic realm=\"x\"\n" +
		"\n" +
		`{"error":"invalid_token"}` + "\n"
	if got := string(DumpResponse(rec)); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	Check(t, "response.golden", DumpResponse(rec))
}
