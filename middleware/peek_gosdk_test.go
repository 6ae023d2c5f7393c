package middleware

import (
	"bytes"
	"testing"

	sjson "github.com/segmentio/encoding/json"
)

// gosdkUnmarshal decodes data as the go-sdk does (internal/json.Unmarshal:
// segmentio/encoding with case-insensitive field matching turned off).
func gosdkUnmarshal(data []byte, v any) error {
	dec := sjson.NewDecoder(bytes.NewReader(data))
	dec.DontMatchCaseInsensitiveStructFields()
	return dec.Decode(v)
}

// FuzzPeekAgreesWithGoSDK: whenever parseMessage accepts a body and the
// decoder the go-sdk uses (segmentio/encoding, case-sensitive) decodes it
// too, both read the same method, tool or prompt name, resource URI and
// protocol version, so the server never runs another operation than the
// one the middleware authorized. Run with -fuzz (.ci/fuzz does).
func FuzzPeekAgreesWithGoSDK(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","arguments":{"q":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///projects/a.json"}}`,
		`{"METHOD":"x","method":"tools/call"}`, `{"method":"a","method":"b"}`, `{"\u006dethod":"a"}`, `{"paramſ":{"name":"x"}}`,
		`{"method":"a\u00e9","params":{"name":"\ud83d\ude00"}}`, `{"method":"a","params":[1]}`, `{"params":{"name":1}}`,
		`{"method":"tools/call","params":{"name":"a\u0000b"}}`, `{"method":"tools/call","params":{"Name":"x","name":"y"}}`,
		"{\"method\":\"tools/call\",\"params\":{\"name\":\"\xef\xbf\xbd\"}}", `{"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}}`,
		`{"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"b"}}}`,
		`{"method":"completion/complete","params":{"ref":{"type":"ref/prompt","Name":"p","name":"q"}}}`, `{"params":{"ref":["ref/prompt"]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var msg message
		if parseMessage(body, &msg) != nil {
			return
		}
		var top struct {
			Method *string           `json:"method"`
			Params *sjson.RawMessage `json:"params"`
		}
		if gosdkUnmarshal(body, &top) != nil {
			return // e.g. "method" is not a string: the SDK refuses it too
		}
		if (top.Method != nil) != msg.method.present || (top.Method != nil && *top.Method != string(msg.method.v)) {
			t.Fatalf("method: go-sdk %v, middleware %q (%t)", top.Method, msg.method.v, msg.method.present)
		}
		if top.Params == nil || len(*top.Params) == 0 || (*top.Params)[0] != '{' {
			return
		}
		var params struct {
			Name *sjson.RawMessage `json:"name"`
			URI  *sjson.RawMessage `json:"uri"`
			Meta *sjson.RawMessage `json:"_meta"`
			Ref  *sjson.RawMessage `json:"ref"`
		}
		if gosdkUnmarshal(*top.Params, &params) != nil {
			return
		}
		agree := func(what string, raw *sjson.RawMessage, has, notString bool, val []byte) {
			if (raw != nil) != has {
				t.Fatalf("%s presence: go-sdk %t, middleware %t", what, raw != nil, has)
			}
			if raw == nil || notString {
				return
			}
			var s string
			if err := gosdkUnmarshal(*raw, &s); err != nil || s != string(val) {
				t.Fatalf("%s: go-sdk %q (%v), middleware %q", what, s, err, val)
			}
		}
		agree("name", params.Name, msg.name.present, msg.name.notString(), msg.name.v)
		agree("uri", params.URI, msg.uri.present, msg.uri.notString(), msg.uri.v)
		// completion/complete's reference, when it is an object.
		isRef := params.Ref != nil && len(*params.Ref) > 0 && (*params.Ref)[0] == '{'
		if isRef != msg.ref.present {
			t.Fatalf("ref object: go-sdk %t, middleware %t", isRef, msg.ref.present)
		}
		if isRef {
			var ref struct {
				Type *sjson.RawMessage `json:"type"`
				Name *sjson.RawMessage `json:"name"`
				URI  *sjson.RawMessage `json:"uri"`
			}
			if gosdkUnmarshal(*params.Ref, &ref) == nil {
				agree("ref.type", ref.Type, msg.ref.typ.present, msg.ref.typ.notString(), msg.ref.typ.v)
				agree("ref.name", ref.Name, msg.ref.name.present, msg.ref.name.notString(), msg.ref.name.v)
				agree("ref.uri", ref.URI, msg.ref.uri.present, msg.ref.uri.notString(), msg.ref.uri.v)
			}
		}
		if params.Meta == nil || len(*params.Meta) == 0 || (*params.Meta)[0] != '{' {
			if msg.version.present {
				t.Fatalf("version: middleware found one, go-sdk has no _meta object")
			}
			return
		}
		var meta struct {
			Version *string `json:"io.modelcontextprotocol/protocolVersion"`
		}
		if gosdkUnmarshal(*params.Meta, &meta) != nil {
			return
		}
		if (meta.Version != nil) != msg.version.present || (meta.Version != nil && *meta.Version != string(msg.version.v)) {
			t.Fatalf("version: go-sdk %v, middleware %q (%t)", meta.Version, msg.version.v, msg.version.present)
		}
	})
}
