package middleware

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func TestParseMessage(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    message
		wantErr error
	}{
		{
			name: "tools/call",
			body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","arguments":{"name":"x","method":"y"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			want: message{method: stringField("tools/call"), id: []byte("1"), name: stringField("get_weather"), version: stringField("2026-07-28")},
		},
		{
			name: "whitespace and order",
			body: " \r\n\t{ \"params\" : { \"uri\" : \"file:///a\" } , \"method\" : \"resources/read\" , \"id\" : \"x\" } ",
			want: message{method: stringField("resources/read"), id: []byte(`"x"`), uri: stringField("file:///a")},
		},
		{
			name: "escapes decoded",
			body: `{"method":"tools\/call","params":{"name":"caf\u00e9"}}`,
			want: message{method: stringField("tools/call"), name: stringField("café")},
		},
		{
			name: "escaped key",
			body: `{"\u006dethod":"tools/list"}`,
			want: message{method: stringField("tools/list")},
		},
		{
			name: "unicode value",
			body: `{"method":"tools/call","params":{"name":"世界"}}`,
			want: message{method: stringField("tools/call"), name: stringField("世界")},
		},
		{name: "response", body: `{"jsonrpc":"2.0","id":1,"result":{"method":"x"}}`, want: message{id: []byte("1")}},
		{name: "params null", body: `{"method":"tools/call","params":null}`, want: message{method: stringField("tools/call")}},
		{name: "name not string", body: `{"method":"tools/call","params":{"name":1}}`, want: message{method: stringField("tools/call"), name: field{present: true}}},
		{name: "nested same names ignored", body: `{"method":"a","params":{"arguments":{"name":"x","Name":"y","uri":"z"}}}`, want: message{method: stringField("a")}},
		{name: "other keys in other case ok", body: `{"method":"a","JSONRPC":"2.0","Result":1}`, want: message{method: stringField("a")}},
		{name: "empty", body: ``, wantErr: errMalformedBody},
		{name: "truncated", body: `{"method":"a"`, wantErr: errMalformedBody},
		{name: "trailing garbage", body: `{"method":"a"} x`, wantErr: errMalformedBody},
		{name: "two objects", body: `{"method":"a"}{"method":"b"}`, wantErr: errMalformedBody},
		{name: "bom", body: "\ufeff{\"method\":\"a\"}", wantErr: errMalformedBody},
		{name: "batch", body: `[{"method":"a"}]`, wantErr: errBatch},
		{name: "empty batch", body: ` [] `, wantErr: errBatch},
		{name: "string", body: `"a"`, wantErr: errInvalidMessage},
		{name: "null", body: `null`, wantErr: errInvalidMessage},
		{name: "duplicate method", body: `{"method":"a","method":"b"}`, wantErr: errInvalidMessage},
		{name: "duplicate id", body: `{"id":1,"method":"a","id":2}`, wantErr: errInvalidMessage},
		{name: "duplicate params", body: `{"method":"a","params":{},"params":{"name":"x"}}`, wantErr: errInvalidMessage},
		{name: "Method", body: `{"Method":"a"}`, wantErr: errInvalidMessage},
		{name: "METHOD after method", body: `{"method":"a","METHOD":"b"}`, wantErr: errInvalidMessage},
		{name: "escaped case variant", body: `{"method":"a","\u004dethod":"b"}`, wantErr: errInvalidMessage},
		{name: "long s in params", body: `{"method":"a","paramſ":{}}`, wantErr: errInvalidMessage},
		{name: "NAME", body: `{"method":"a","params":{"NAME":"x"}}`, wantErr: errInvalidMessage},
		{name: "duplicate uri", body: `{"method":"a","params":{"uri":"x","uri":"y"}}`, wantErr: errInvalidMessage},
		{name: "params a number", body: `{"method":"ping","params":0}`, wantErr: errInvalidMessage},
		{name: "params a string", body: `{"method":"ping","params":"x"}`, wantErr: errInvalidMessage},
		{name: "params an array", body: `{"method":"tools/call","params":["x"]}`, wantErr: errInvalidMessage},
		{name: "params true", body: `{"method":"ping","params":true}`, wantErr: errInvalidMessage},
		{name: "_META", body: `{"method":"a","params":{"_META":{}}}`, wantErr: errInvalidMessage},
		{name: "duplicate version", body: `{"method":"a","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1","io.modelcontextprotocol/protocolVersion":"2"}}}`, wantErr: errInvalidMessage},
		{name: "case variant version", body: `{"method":"a","params":{"_meta":{"io.modelcontextprotocol/protocolversion":"1"}}}`, wantErr: errInvalidMessage},
		{name: "version not string", body: `{"method":"a","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}}`, wantErr: errInvalidMessage},
		{name: "method not string", body: `{"method":null}`, wantErr: errInvalidMessage},
		{name: "invalid UTF-8 in method", body: "{\"method\":\"tools/call\xff\"}", wantErr: errInvalidMessage},
		{name: "lone surrogate", body: `{"method":"tools/call\ud800"}`, wantErr: errInvalidMessage},
		{name: "replacement char", body: `{"method":"a","params":{"name":"x\ufffd"}}`, wantErr: errInvalidMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got message
			err := parseMessage([]byte(tt.body), &got)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("parseMessage() error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if d := diffMessage(got, tt.want); d != "" {
				t.Errorf("parseMessage() %s", d)
			}
		})
	}
}

func diffMessage(got, want message) string {
	var b strings.Builder
	cmp := func(name string, g, w []byte) {
		if string(g) != string(w) {
			b.WriteString(name + ": got " + string(g) + ", want " + string(w) + "; ")
		}
	}
	cmp("method", got.method.v, want.method.v)
	cmp("id", got.id, want.id)
	cmp("name", got.name.v, want.name.v)
	cmp("uri", got.uri.v, want.uri.v)
	cmp("version", got.version.v, want.version.v)
	flags := func(m message) [9]bool {
		return [9]bool{m.method.present, m.id != nil, m.name.present, m.uri.present, m.version.present,
			m.name.notString(), m.uri.notString(), m.method.str, m.version.str}
	}
	if flags(got) != flags(want) {
		b.WriteString("flags differ")
	}
	return b.String()
}

func TestReadBody(t *testing.T) {
	tests := []struct {
		name    string
		body    io.Reader
		length  int64 // -1: unknown (chunked)
		limit   int64
		want    string
		wantErr error
	}{
		{name: "exact limit", body: strings.NewReader("12345"), length: 5, limit: 5, want: "12345"},
		{name: "over limit by length", body: strings.NewReader("123456"), length: 6, limit: 5, wantErr: errBodyTooLarge},
		{name: "chunked at limit", body: strings.NewReader("12345"), length: -1, limit: 5, want: "12345"},
		{name: "chunked over limit", body: strings.NewReader("123456"), length: -1, limit: 5, wantErr: errBodyTooLarge},
		{name: "chunked large", body: strings.NewReader(strings.Repeat("x", 5000)), length: -1, limit: 1 << 20, want: strings.Repeat("x", 5000)},
		{name: "one byte at a time", body: iotest.OneByteReader(strings.NewReader("abcdef")), length: -1, limit: 10, want: "abcdef"},
		{name: "read error", body: iotest.ErrReader(errors.New("boom")), length: -1, limit: 10, wantErr: errMalformedBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", tt.body)
			r.ContentLength = tt.length
			got, err := readBody(r, tt.limit)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("readBody() error = %v, want %v", err, tt.wantErr)
			}
			if string(got) != tt.want {
				t.Errorf("readBody() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReadBodyMaxBytesReader: an outer http.MaxBytesReader's limit is a
// 413 as well.
func TestReadBodyMaxBytesReader(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("123456"))
	r.ContentLength = -1
	r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 3)
	if _, err := readBody(r, 100); !errors.Is(err, errBodyTooLarge) {
		t.Fatalf("readBody() error = %v, want errBodyTooLarge", err)
	}
}

func TestCanonicalURI(t *testing.T) {
	tests := []struct {
		uri  string
		want bool
	}{
		{"file:///projects/a/b.txt", true},
		{"file:///projects/my%20file.txt", true},
		{"https://h.example/p?q=a//b#x//y", true},
		{"urn:example:a", true},
		{"file:///projects/../secret", false},
		{"file:///projects//secret", false},
		{"file:///projects/%73ecret", false},
		{"file:///projects/secret%2Fkeys", false},
		{"file:///projects/secret%2fkeys", false},
		{"file:///projects/a%5Cb", false},
		{"file:///projects/config%2Ejson", false},
		{"file:///projects/a%7e", false},
		{"file:///projects/a%", false},
		{"file:///projects/a%zz", false},
		{"file:///projects\\secret", false},
		{"FILE:///projects/a", false},
		{"https://H.example/p", false},
		{"https://h.example/P", true},
	}
	for _, tt := range tests {
		if got := canonicalURI([]byte(tt.uri)); got != tt.want {
			t.Errorf("canonicalURI(%q) = %t, want %t", tt.uri, got, tt.want)
		}
	}
}

func TestHasDotSegment(t *testing.T) {
	tests := []struct {
		uri  string
		want bool
	}{
		{"file:///projects/a/b.txt", false},
		{"file:///projects/../secret", true},
		{"file:///projects/./secret", true},
		{"file:///projects/..", true},
		{"file:///projects/%2e%2e/secret", true},
		{"file:///projects/%2E./secret", true},
		{"file:///projects/.%2e", true},
		{"file:///projects\\..\\secret", true},
		{"file:///projects/...", false},
		{"file:///projects/.hidden", false},
		{"file:///projects/a..b", false},
		{"file:///projects/%2e%2e%2e", false},
		{"file:///projects/x?..", true},
		{"https://h/p/%252e%252e/", false},
	}
	for _, tt := range tests {
		if got := hasDotSegment([]byte(tt.uri)); got != tt.want {
			t.Errorf("hasDotSegment(%q) = %t, want %t", tt.uri, got, tt.want)
		}
	}
}
