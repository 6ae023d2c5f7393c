package middleware

import (
	"encoding/json"
	"reflect"
	"testing"

	sjson "github.com/segmentio/encoding/json"
)

// FuzzRuleArgsAgreeWithSDKs: whenever the body peek accepts a tools/call
// and the rules' reading of its arguments (decodeArgs, for a rule that
// reads "tenant") succeeds, the arguments a rule sees are exactly those
// the servers dispatch: the go-sdk's decoder (segmentio/encoding,
// case-sensitive) reads the same map, and a handler decoding into a
// struct with encoding/json (case-insensitive: mcp-go's BindArguments,
// go-sdk typed tools through json.Unmarshal) reads the same "tenant".
// Duplicate members, escapes, case variants and numbers are seeded. Run
// with -fuzz (.ci/fuzz does).
func FuzzRuleArgsAgreeWithSDKs(f *testing.F) {
	for _, args := range []string{
		`{"tenant":"a"}`, `{"tenant":"a","tenant":"b"}`, `{"\u0074enant":"b"}`, `{"Tenant":"b"}`, `{"TENANT":"b","tenant":"a"}`,
		`{"tenant":7}`, `{"tenant":1e400}`, `{"tenant":-0}`, `{"tenant":9007199254740993}`, `{"tenant":"a\u0000"}`,
		`{"tenant":null}`, `{"x":{"tenant":"b","Tenant":"c"}}`, `{"tenant":["a"]}`, `[]`, `"a"`, `null`, `{"tenanſ":"b"}`,
		`{"ſtenant":"b"}`, `{"tenant":"\ud800"}`, "{\"tenant\":\"\xff\"}", `{"tenant":"a"} `, `{}`,
	} {
		f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":` + args + `}}`))
	}
	names := []string{"tenant"}
	f.Fuzz(func(t *testing.T, body []byte) {
		var msg message
		if parseMessage(body, &msg) != nil || msg.args == nil {
			return
		}
		got, err := decodeArgs(msg.args, names)
		if err != nil || got == nil {
			return // refused (400 or a denial), or absent
		}
		var params struct {
			Arguments sjson.RawMessage `json:"arguments"`
		}
		var top struct {
			Params *sjson.RawMessage `json:"params"`
		}
		if gosdkUnmarshal(body, &top) != nil || top.Params == nil || gosdkUnmarshal(*top.Params, &params) != nil {
			t.Fatalf("the go-sdk refuses a body the rules read: %q", body)
		}
		var sdk map[string]any
		if err := gosdkUnmarshal(params.Arguments, &sdk); err != nil {
			t.Fatalf("the go-sdk refuses arguments the rules read: %q: %v", params.Arguments, err)
		}
		if !reflect.DeepEqual(got, sdk) {
			t.Fatalf("arguments: rules %#v, go-sdk %#v", got, sdk)
		}
		var typed struct {
			Tenant any `json:"tenant"`
		}
		if json.Unmarshal(params.Arguments, &typed) != nil {
			return
		}
		if !reflect.DeepEqual(typed.Tenant, got["tenant"]) {
			t.Fatalf("tenant: rules %#v, encoding/json struct %#v (%q)", got["tenant"], typed.Tenant, params.Arguments)
		}
	})
}
