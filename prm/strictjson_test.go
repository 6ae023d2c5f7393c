package prm

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// strictClass maps an error of internal/strictjson to checkJSON's.
func strictClass(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, strictjson.ErrSyntax):
		return errJSONSyntax
	case errors.Is(err, strictjson.ErrInvalidUTF8):
		return errJSONUTF8
	case errors.Is(err, strictjson.ErrDuplicateName):
		return errJSONDuplicate
	case errors.Is(err, strictjson.ErrCaseVariant):
		return errJSONCase
	case errors.Is(err, strictjson.ErrNotObject):
		return errJSONNotObject
	}
	return err
}

// FuzzCheckJSONAgreesWithStrictJSON is the differential test of prm's own
// checker (the leaf may not import internal/strictjson) against the
// project's one JSON reader: for every input, both accept, or both refuse
// for the same rule.
func FuzzCheckJSONAgreesWithStrictJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `1e999`, `"x"`, ``, ` `, `{} {}`, `{}x`, `{"a":1}`, `{"a":1,"a":2}`, `{"a":1,"A":2}`,
		`{"resource":"x","RESOURCE":"y"}`, `{"Resource":"x"}`, `{"jw\u212As_uri":1}`, `{"\u017f":1,"S":2}`,
		`{"x":{"a":[{"b":1,"b":2}]}}`, `{"x":"\ud800"}`, `{"x":"\ud800\udc00"}`, `{"x":"\ufffd"}`, `{"x":"\\ufffd\ud800"}`,
		`{"x":"\ud800\ud800\udc00"}`, "{\"x\":\"\xff\"}", "{\"\xff\":1,\"\xfe\":2}", `{"\ud800":1,"\udbff":2}`,
		"{\"x\":\"\xe2\x82\"}", "\xef\xbb\xbf{}", `{"a":1,}`, `{"a" 1}`, `[1,2,]`, `{"a":01}`, `{"a":"\u00"}`,
		strings.Repeat("[", 100) + strings.Repeat("]", 100), // the depth bound: TestParseJSONPolicy
		`{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"],"scopes_supported":["a"]}`,
	} {
		f.Add([]byte(s))
	}
	read := metadataNames()
	f.Fuzz(func(t *testing.T, doc []byte) {
		got := checkJSON(doc, read)
		want := strictClass(strictjson.Members(doc, read, func(name, value []byte) error { return nil }))
		if got != want {
			t.Fatalf("checkJSON(%q) = %v, internal/strictjson says %v", doc, got, want)
		}
	})
}
