package stdiobridge

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// FuzzLines: the line reader never returns a line over the bound, with a
// newline, or empty; it ends with io.EOF or one of its errors.
func FuzzLines(f *testing.F) {
	for _, s := range []string{
		"", "\n", `{"jsonrpc":"2.0","method":"x"}` + "\n", "a\r\nb\n\n\nc", "0123456789abcdef0123\n", "x",
		"\r\n\r\n", "short\nthis line is longer than the bound\nok\n",
	} {
		f.Add([]byte(s), 16)
	}
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		max = 1 + (max&0xff+256)%256
		lr := newLineReader(bytes.NewReader(in), max)
		for range len(in) + 1 {
			line, err := lr.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, errLineTooLong) && !errors.Is(err, errPartialLine) {
					t.Fatalf("error %v", err)
				}
				return
			}
			if len(line) == 0 || len(line) > max || bytes.IndexByte(line, '\n') >= 0 || len(bytes.TrimSpace(line)) == 0 {
				t.Fatalf("line %q (max %d)", line, max)
			}
		}
		t.Fatal("more lines than bytes")
	})
}

// FuzzMessage: a message the bridge accepts is one strict JSON object on
// one line; remapping its id gives a message that parses to the same
// kind and method with exactly the new id, and mapping back restores
// the original id.
func FuzzMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}}`,
		`{"jsonrpc":"2.0","id":"a\"b","result":{}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"m"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		"{\"jsonrpc\":\"2.0\",\r\"id\":1,\"method\":\"ping\"}",
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`, `[{"jsonrpc":"2.0","id":1,"method":"x"}]`, `{"jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":{},"method":"x"}`, `{"jsonrpc":"2.0","ID":1,"id":1,"method":"x"}`,
	} {
		f.Add([]byte(s))
	}
	var pool strictjson.Pool
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := parseMessage(&pool, in)
		if err != nil {
			return
		}
		if bytes.ContainsAny(m.raw, "\r\n") {
			t.Fatalf("accepted message spans lines: %q", m.raw)
		}
		if m.kind != kindResponse && m.kind != kindRequest {
			return
		}
		out := m.withID([]byte("42"))
		m2, err := parseMessage(&pool, out)
		if err != nil {
			t.Fatalf("remapped %q: %v", out, err)
		}
		if m2.kind != m.kind || m2.method != m.method || string(m2.id) != "42" {
			t.Fatalf("remapped %q: kind %d method %q id %q", out, m2.kind, m2.method, m2.id)
		}
		back := m2.withID(m.id)
		if !bytes.Equal(back, m.raw) {
			t.Fatalf("round trip %q != %q", back, m.raw)
		}
		if tok := m.progressToken(&pool); tok != nil && !validID(tok) {
			t.Fatalf("progress token %q", tok)
		}
	})
}

// FuzzStatelessRewrite: what a child writes, reshaped for a stateless
// client (modernResult) or made a server/discover answer from its
// initialize result (discoverResponse), is always one valid JSON object
// with the client's id, and a response that is a message stays a
// response.
func FuzzStatelessRewrite(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{ }}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":5}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","cacheScope":"public"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":1,"result":[]}`,
		`{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{},"tasks":{}},"serverInfo":{"name":"x","version":"1"},"instructions":"hi"}`,
		`{"capabilities":{"tools":1,"prompts":{}},"instructions":3,"serverInfo":"x"}`,
	} {
		f.Add([]byte(s), "tools/list")
	}
	var pool strictjson.Pool
	f.Fuzz(func(t *testing.T, in []byte, method string) {
		if m, err := parseMessage(&pool, in); err == nil && m.kind == kindResponse {
			out := modernResult(&pool, method, m.raw)
			m2, err := parseMessage(&pool, out)
			if err != nil || m2.kind != kindResponse || !bytes.Equal(m2.id, m.id) {
				t.Fatalf("modernResult(%q) = %q: %v", in, out, err)
			}
		}
		if strictjson.Valid(in) != nil || len(in) == 0 || in[0] != '{' {
			return
		}
		out := discoverResponse(&pool, []byte("7"), in)
		m, err := parseMessage(&pool, out)
		if err != nil || m.kind != kindResponse || string(m.id) != "7" {
			t.Fatalf("discoverResponse(%q) = %q: %v", in, out, err)
		}
	})
}

// FuzzDirRender: whatever the user's claims (the token's, untrusted), the
// directory rendered from a template is one path below the base: each
// placeholder one component, never empty, ".", ".." or with a separator
// or NUL, kept only when safe, and two different values never render
// alike.
func FuzzDirRender(f *testing.F) {
	for _, s := range [][2]string{
		{"alice", "t1"}, {"../../etc", ""}, {"a/b", "."}, {"..", "~"}, {"Alice", "alice"}, {"\x00", "%2e%2e"},
		{"\u2024\u2024", "\uff0f"}, {"~0123456789abcdef0123456789abcdef", "x"}, {strings.Repeat("a", 65), strings.Repeat("a", 64)},
	} {
		f.Add(s[0], s[1])
	}
	d, err := parseDir("/srv/mcp/{tenant}/{subject}/{user}")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, v := range []string{a, b} {
			c := component(v)
			if c == "" || c == "." || c == ".." || strings.ContainsAny(c, "/\x00") || len(c) > 64 {
				t.Fatalf("component(%q) = %q", v, c)
			}
			if c != v && (!strings.HasPrefix(c, "~") || len(c) != 33) && (v != "" || c != "~") {
				t.Fatalf("component(%q) = %q: neither the value nor its hash", v, c)
			}
			if c == v && strings.ToLower(v) != v {
				t.Fatalf("component(%q) kept a value with upper case", v)
			}
		}
		if a != b && component(a) == component(b) {
			t.Fatalf("component(%q) == component(%q)", a, b)
		}
		rel := d.render(User{Key: a + "|" + b, Subject: a, Tenant: b})
		full := filepath.Join(d.base, rel)
		if !strings.HasPrefix(full, d.base+"/") || strings.Count(rel, "/") != 2 || filepath.Clean(full) != full {
			t.Fatalf("render(%q, %q) = %q", a, b, full)
		}
	})
}

// FuzzLastEventID: parseEventID accepts exactly the IDs the bridge
// writes (a 32-digit lowercase hex stream, '-', a canonical int64) and
// gives back their parts.
func FuzzLastEventID(f *testing.F) {
	id := "0123456789abcdef0123456789abcdef"
	for _, s := range []string{id + "-0", id + "-1", id + "-9223372036854775807", id + "-9223372036854775808",
		id + "-01", id + "-", id, "", "-1", id + "-1\n", strings.ToUpper(id) + "-2", id + "-+1", id + "--1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		stream, seq, err := parseEventID(v)
		if err != nil {
			return
		}
		if seq < 0 || len(stream) != streamIDLen {
			t.Fatalf("%q: stream %q seq %d", v, stream, seq)
		}
		if again := string(appendEvent(nil, stream, seq, nil)); again != "id: "+v+"\ndata: \n\n" {
			t.Fatalf("%q is not what the bridge writes: %q", v, again)
		}
	})
}
