package prm

import (
	"errors"
	"strings"
	"testing"
)

// TestParseJSONPolicy: Parse reads by the project's JSON policy
// (docs/jose.md): a document that two readers could read differently is
// refused, whichever member comes first, with the class of the rule it
// breaks in the error.
func TestParseJSONPolicy(t *testing.T) {
	const res = "https://mcp.example.com/mcp"
	const as = `"authorization_servers":["https://auth.example.com"]`
	tests := []struct {
		name, body string
		wantErr    string // "": accepted; else the end of the error text
	}{
		{"plain", `{"resource":"` + res + `",` + as + `}`, ""},
		{"escaped names and values", `{"reso\u0075rce":"https:\/\/mcp.example.com\/mcp",` + as + `,"x":"\ud83d\ude00"}`, ""},
		{"U+FFFD itself and escaped", `{"resource":"` + res + `",` + as + `,"x":"\ufffd\uFFFD` + "\uFFFD" + `\\ufffd"}`, ""},
		{"big number", `{"resource":"` + res + `",` + as + `,"x":1e999}`, ""},
		{"case variant after", `{"resource":"` + res + `",` + as + `,"RESOURCE":"https://evil.example/mcp"}`, "case-variant member name"},
		{"case variant before", `{"RESOURCE":"https://evil.example/mcp","resource":"` + res + `",` + as + `}`, "case-variant member name"},
		{"lone case variant", `{"Resource":"` + res + `",` + as + `}`, "case-variant member name"},
		{"Kelvin sign folds to k", `{"resource":"` + res + `",` + as + `,"jwks_uri":"https://a","jw\u212as_uri":"https://b"}`, "case-variant member name"},
		{"long s folds to s", `{"resource":"` + res + `",` + as + `,"scopes_\u017fupported":["a"]}`, "case-variant member name"},
		{"two unread names equal under folding", `{"resource":"` + res + `",` + as + `,"x":1,"X":2}`, "case-variant member name"},
		{"repeated member", `{"resource":"` + res + `",` + as + `,"resource":"https://evil.example/mcp"}`, "duplicate member name"},
		{"repeated after unescaping", `{"resource":"` + res + `",` + as + `,"r\u0065source":"https://evil.example/mcp"}`, "duplicate member name"},
		{"repeated in a nested object", `{"resource":"` + res + `",` + as + `,"x":{"a":1,"a":2}}`, "duplicate member name"},
		{"case variants in a nested object are not read", `{"resource":"` + res + `",` + as + `,"x":{"a":1,"A":2}}`, ""},
		{"invalid UTF-8", `{"resource":"` + res + `",` + as + `,"x":"` + "\xff" + `"}`, "invalid UTF-8"},
		{"lone surrogate", `{"resource":"` + res + `",` + as + `,"x":"\ud800"}`, "invalid UTF-8"},
		{"lone surrogate beside U+FFFD", `{"resource":"` + res + `",` + as + `,"x":"\ud800\ufffd"}`, "invalid UTF-8"},
		{"lone surrogate in a name", `{"resource":"` + res + `",` + as + `,"\udc00":1}`, "invalid UTF-8"},
		{"trailing value", `{"resource":"` + res + `",` + as + `} {}`, "invalid JSON"},
		{"deepest", `{"resource":"` + res + `",` + as + `,"x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`, ""},
		{"too deep", `{"resource":"` + res + `",` + as + `,"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`, "invalid JSON"},
		{"not an object", `["resource"]`, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.body), res)
			if tt.wantErr == "" {
				if err != nil || m.Resource != res {
					t.Fatalf("Parse = %v, %v; want resource %q", m, err, res)
				}
				return
			}
			if !errors.Is(err, ErrInvalidMetadata) || !strings.HasSuffix(err.Error(), ": "+tt.wantErr) || m != nil {
				t.Fatalf("Parse = %v, %v; want ErrInvalidMetadata: %s", m, err, tt.wantErr)
			}
		})
	}
}
