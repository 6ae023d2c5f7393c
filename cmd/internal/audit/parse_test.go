package audit

import (
	"os"
	"strings"
	"testing"
)

func TestReadRPC(t *testing.T) {
	tests := []struct {
		name, ct, body string
		wantCode       int
		wantResult     bool
		wantNil        bool
	}{
		{name: "json result", ct: "application/json", body: `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, wantResult: true},
		{name: "json error", ct: "application/json; charset=utf-8", body: `{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch"}}`, wantCode: -32020},
		{name: "sse result after a notification", ct: "text/event-stream",
			body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\n data: \"result\":{}}\n\n", wantNil: true},
		{name: "sse multi-line data", ct: "text/event-stream",
			body: "data: {\"jsonrpc\":\"2.0\",\"id\":1,\ndata: \"result\":{\"x\":1}}\n\n", wantResult: true},
		{name: "sse without final blank line", ct: "text/event-stream", body: "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32022,\"message\":\"x\"}}", wantCode: -32022},
		{name: "duplicate member refused", ct: "application/json", body: `{"jsonrpc":"2.0","id":1,"error":{"code":1,"code":-32020,"message":"x"}}`, wantNil: true},
		{name: "invalid UTF-8 refused", ct: "application/json", body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"\xff\"}}", wantNil: true},
		{name: "plain text", ct: "text/plain", body: "Bad Request", wantNil: true},
		{name: "empty", ct: "", body: "", wantNil: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := readRPC(tt.ct, []byte(tt.body))
			switch {
			case tt.wantNil && r != nil && (r.Error != nil || len(r.Result) > 0):
				t.Fatalf("got %+v, want no response", r)
			case tt.wantNil:
			case r == nil:
				t.Fatal("got nil")
			case tt.wantResult && len(r.Result) == 0:
				t.Errorf("no result")
			case tt.wantCode != 0 && (r.Error == nil || r.Error.Code != tt.wantCode):
				t.Errorf("error %+v, want code %d", r.Error, tt.wantCode)
			}
		})
	}
}

func TestQuotedParam(t *testing.T) {
	tests := []struct {
		header, param string
		want          bool
	}{
		{`Bearer scope="a b", error="invalid_token"`, "scope", true},
		{`Bearer scope=a, error="invalid_token"`, "scope", false},
		{`Bearer error = "x"`, "error", true},
		{`Bearer error_description="error=1"`, "error", false},
		{`Bearer realm="r",scope="s"`, "scope", true},
	}
	for _, tt := range tests {
		if got := quotedParam(tt.header, tt.param); got != tt.want {
			t.Errorf("quotedParam(%q, %q) = %v, want %v", tt.header, tt.param, got, tt.want)
		}
	}
}

func TestLeakIn(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"error":"invalid_token"}`, ""},
		{`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Origin not allowed"}}`, ""},
		{"Method Not Allowed", ""},
		{`Bearer resource_metadata="https://mcp.example.rs:443/.well-known/oauth-protected-resource/home/user/x.py:1"`, ""},
		{"panic: runtime error: index out of range\n\ngoroutine 7 [running]:", "a Go stack trace"},
		{"error at /srv/app/auth.go:42", "a source file position"},
		{"Traceback (most recent call last):\n  File", "a Python traceback"},
		{"JsonWebTokenError: invalid signature", "a JOSE/JWT library error"},
		{"token has invalid claims: token is expired", "a JOSE/JWT library error"},
		{"json: cannot unmarshal string into Go value of type int", "a JSON decoder error"},
		{"dial tcp 10.0.0.5:5432: connect: connection refused", "a database or network error"},
	}
	for _, tt := range tests {
		if got := leakIn(tt.body); got != tt.want {
			t.Errorf("leakIn(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestRedact(t *testing.T) {
	a := &Auditor{secrets: map[string]string{"opaque-secret-token-123": "token"}}
	got := a.redact("Authorization: Bearer opaque-secret-token-123, other eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln")
	if want := "Authorization: Bearer <token>, other <jwt>"; got != want {
		t.Errorf("redact = %q, want %q", got, want)
	}
}

// TestRedactShortSecrets: every secret the audit holds is redacted,
// whatever its length (a client secret or token of under 8 bytes was
// shown as it is), and no label or longer secret is ever cut into.
func TestRedactShortSecrets(t *testing.T) {
	tests := []struct {
		secrets map[string]string
		in      string
		want    string
	}{
		{map[string]string{"s3": "client-secret"}, "Authorization: Basic s3; body: s3s3", "Authorization: Basic <client-secret>; body: <client-secret>"},
		{map[string]string{"a1b2c3d": "token"}, "Bearer a1b2c3d", "Bearer <token>"},
		// A short secret that occurs in a label ("oke" in "token") or in a
		// longer secret never changes them.
		{map[string]string{"oke": "token2", "xokey-long-secret": "token"}, "Bearer xokey-long-secret oke", "Bearer <token> <token2>"},
		// Overlapping occurrences: no byte of either shows.
		{map[string]string{"xab": "a", "abcdefgh": "b"}, "-xabcdefgh-", "-<a>-"},
		{map[string]string{"7": "pin"}, "code=7&x=17", "code=<pin>&x=1<pin>"},
	}
	for _, tt := range tests {
		a := &Auditor{secrets: tt.secrets}
		got := a.redact(tt.in)
		if got != tt.want {
			t.Errorf("redact(%q) with %v = %q, want %q", tt.in, tt.secrets, got, tt.want)
		}
		for k := range tt.secrets {
			if strings.Contains(got, k) && !strings.Contains(tt.want, k) {
				t.Errorf("redact(%q) = %q shows secret %q", tt.in, got, k)
			}
		}
	}
	// Registered by secret (its escaped forms too): a 4-byte token.
	a := &Auditor{secrets: map[string]string{}}
	a.secret("t0k/", "token")
	got := a.redact(`GET /mcp?access_token=t0k%2F [Authorization: Bearer t0k/] → 200 OK; body: {"echo":"t0k\/"}`)
	if want := `GET /mcp?access_token=<token> [Authorization: Bearer <token>] → 200 OK; body: {"echo":"<token>"}`; got != want {
		t.Errorf("redact = %q, want %q", got, want)
	}
}

func TestCatalogUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Catalog() {
		if seen[c.ID] || c.ID == "" || c.Title == "" || c.Clause == "" || c.Severity.rank() == 0 {
			t.Errorf("bad or duplicate catalog entry %+v", c)
		}
		seen[c.ID] = true
		if strings.ToUpper(c.ID) != c.ID {
			t.Errorf("%s: IDs are upper case", c.ID)
		}
	}
}

// TestDocsListEveryCheck keeps docs/audit.md's check table in step with
// the catalog.
func TestDocsListEveryCheck(t *testing.T) {
	b, err := os.ReadFile("../../../docs/audit.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range Catalog() {
		row := "| `" + c.ID + "` | " + c.Title + " | " + string(c.Severity) + " | "
		if !strings.Contains(doc, row) {
			t.Errorf("docs/audit.md has no row %q", row)
		}
	}
}

func TestHeaderValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"get_weather", "get_weather"},
		{"file:///projects/myapp/config.json", "file:///projects/myapp/config.json"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
	}
	for _, tt := range tests {
		if got := headerValue(tt.in); got != tt.want {
			t.Errorf("headerValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPrintable(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain → text…", "plain → text…"},
		{"\x1b]0;pwned\a\x1b[2J", `\x1b]0;pwned\x07\x1b[2J`},
		{"a\u009b2J", `a\u009b2J`},
		{"\u202eevil", `\u202eevil`},
		{"zero\u200bwidth\ufeff", `zero\u200bwidth\ufeff`},
		{"line\u2028sep", `line\u2028sep`},
		{"bad\xffbyte", `bad\xffbyte`},
		{"tag\U000e0041", `tag\U000e0041`},
		{"tab\tnl\n", `tab\x09nl\x0a`},
	} {
		if got := printable(tt.in); got != tt.want {
			t.Errorf("printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := cut("ab→c", 3); got != "ab…" {
		t.Errorf("cut splits a rune: %q", got)
	}
}
