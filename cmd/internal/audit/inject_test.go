package audit_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/mcpguard/mcpguard/cmd/internal/audit"
)

// The strings an audited server controls (tool names, metadata members,
// its TLS certificate's names, header values) reach the report, which is
// printed to a terminal and published by CI. None may carry a terminal
// control sequence or a bidirectional override into it.

// payloads are what a hostile server puts in every string it controls: an
// OSC title change and a screen clear (C0 ESC and BEL), the 8-bit CSI
// (U+009B, C1) and a right-to-left override (U+202E).
const (
	escPayload  = "\x1b]0;pwned\a\x1b[2J"
	c1Payload   = "\u009b2J"
	bidiPayload = "\u202eevil"
)

// unsafeRune reports a rune a terminal may act on or that reorders text.
func unsafeRune(r rune) bool {
	return r != ' ' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || unicode.Is(unicode.Cf, r))
}

// checkClean fails for every report string and output byte that carries
// an unsafe rune.
func checkClean(t *testing.T, rep *audit.Report) {
	t.Helper()
	for _, r := range rep.Results {
		for _, s := range append([]string{r.Detail}, r.Evidence...) {
			if i := strings.IndexFunc(s, unsafeRune); i >= 0 {
				t.Errorf("%s: unsafe rune %q at %d in %q", r.ID, []rune(s[i:])[0], i, s)
			}
		}
	}
	var table, js, sarif bytes.Buffer
	if err := audit.WriteTable(&table, rep, true); err != nil {
		t.Fatal(err)
	}
	if err := audit.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if err := audit.WriteSARIF(&sarif, rep, "test"); err != nil {
		t.Fatal(err)
	}
	out := table.String()
	for _, v := range []string{"\x1b", "\a", "\u009b", "\u202e"} {
		if strings.Contains(out, v) {
			t.Errorf("table output carries %q", v)
		}
	}
	// The JSON outputs, decoded (as a CI step with jq -r would print them).
	for name, b := range map[string][]byte{"json": js.Bytes(), "sarif": sarif.Bytes()} {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		walkStrings(v, func(s string) {
			// SARIF joins a result's lines with "\n".
			if i := strings.IndexFunc(s, func(r rune) bool { return r != '\n' && unsafeRune(r) }); i >= 0 {
				t.Errorf("%s output: unsafe rune %q in %q", name, []rune(s[i:])[0], s)
			}
		})
	}
}

func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case map[string]any:
		for k, e := range v {
			f(k)
			walkStrings(e, f)
		}
	}
}

// hostileMCP is a server that puts the payloads in its tool names, its
// metadata and its challenge, and refuses every tool call with a 401
// insufficient_scope (which the audit reports by tool name).
func hostileMCP(t *testing.T, token string) *httptest.Server {
	t.Helper()
	evil := escPayload + c1Payload + bidiPayload
	var s *httptest.Server
	s = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			w.Header().Set("Content-Type", "application/json")
			b, _ := json.Marshal(map[string]any{"resource": s.URL + "/mcp" + evil, "authorization_servers": []string{"https://as" + evil + ".example"}})
			_, _ = w.Write(b)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+s.URL+`/.well-known/oauth-protected-resource/mcp", scope="a`+c1Payload+bidiPayload+`"`)
			if q := r.URL.Query().Get("access_token"); q != "" {
				// Echo it the way PHP's json_encode writes "/".
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"error":"invalid_request","error_description":"token `+strings.ReplaceAll(q, "/", `\/`)+` not accepted in the query"}`)
				return
			}
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var req struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		_ = json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case "tools/list":
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
				"tools": []any{map[string]any{"name": "tool" + evil, "inputSchema": map[string]any{"type": "object"}}},
			}})
			_, _ = w.Write(b)
		case "tools/call":
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="b`+c1Payload+`"`)
			w.WriteHeader(http.StatusUnauthorized)
		default:
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "no" + evil}})
			_, _ = w.Write(b)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestServerStringsCannotInjectIntoReport: tool names, metadata members,
// challenge parameters and error messages of a hostile server.
func TestServerStringsCannotInjectIntoReport(t *testing.T) {
	s := hostileMCP(t, "hostile-test-token")
	rep, _ := runRaw(t, audit.Config{Endpoint: s.URL + "/mcp", Token: "hostile-test-token", CallTools: true})
	found := false
	for _, r := range rep.Results {
		if strings.Contains(r.Detail, "tool") && strings.Contains(r.Detail, "insufficient scope answered with 401") {
			found = true
		}
	}
	if !found {
		t.Errorf("no STEP-UP detail naming the tool; the test server no longer reaches that path:\n%s", dumpDetails(rep))
	}
	checkClean(t, rep)
}

// TestCertificateNamesCannotInjectIntoReport: a TLS server whose
// certificate (which fails verification) names the payload: the x509
// error quotes the certificate's DNS names.
func TestCertificateNamesCannotInjectIntoReport(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hostile"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{escPayload},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: k}}}
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	// "localhost", so that the verification error names the certificate's
	// DNS names (an IP literal gets "doesn't contain any IP SANs").
	endpoint := fmt.Sprintf("https://localhost:%d/", s.Listener.Addr().(*net.TCPAddr).Port)
	rep, _ := runRaw(t, audit.Config{Endpoint: endpoint})
	if r := result(rep, audit.CH401); !strings.Contains(strings.Join(r.Evidence, " "), "certificate is valid for") {
		t.Errorf("CH-401 evidence %q does not quote the verification error; the test no longer reaches that path", r.Evidence)
	}
	checkClean(t, rep)
}

func dumpDetails(rep *audit.Report) string {
	var b strings.Builder
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "%s %s %q\n", r.ID, r.Verdict, r.Detail)
	}
	return b.String()
}

// TestEncodedTokenNotInOutput: an opaque token with "+", "/" and "=" (standard
// base64, as some authorization servers issue) is percent-encoded when
// TR-QUERY-TOKEN puts it in the URL query, and a server may echo it with
// "/" escaped as in PHP's JSON. Neither spelling may reach the report.
func TestEncodedTokenNotInOutput(t *testing.T) {
	const tok = "opaque+Token/with=base64+chars/0123456789=="
	s := hostileMCP(t, tok)
	rep, _ := runRaw(t, audit.Config{Endpoint: s.URL + "/mcp", Token: tok, CallTools: false})
	if r := result(rep, audit.TRQueryToken); !strings.Contains(strings.Join(r.Evidence, " "), "access_token=") {
		t.Fatalf("TR-QUERY-TOKEN evidence %q has no query token; the test no longer reaches that path", r.Evidence)
	}
	var table, js bytes.Buffer
	if err := audit.WriteTable(&table, rep, true); err != nil {
		t.Fatal(err)
	}
	if err := audit.WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{table.String(), js.String()} {
		for _, spelling := range []string{tok, url.QueryEscape(tok), strings.ReplaceAll(tok, "/", `\/`), "opaque%2BToken", "opaque+Token"} {
			if strings.Contains(out, spelling) {
				t.Errorf("output contains the token as %q:\n%s", spelling, grepLines(out, "opaque"))
			}
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
