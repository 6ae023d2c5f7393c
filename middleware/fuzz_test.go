package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// FuzzBearerToken: arbitrary Authorization values never panic, an accepted
// token is a b64token that the header ends with, and every error is one of
// the documented sentinels.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{
		"Bearer eyJhbGciOiJIUzI1NiIs...", // spec-auth.md §5.4
		"Bearer abc", "bearer abc", "BEARER abc", "Bearer", "Bearer ", "Bearer  a", "Bearer a b",
		"Basic dXNlcjpwYXNz", "DPoP abc", "Bearer\tabc", "Bearer abc==", "Bearer ==", "", " ",
		"Bearer a\x00b", "Bearer é", "Bearer a,Bearer b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tok, err := parseBearer(v)
		if err != nil {
			if tok != "" {
				t.Fatalf("token %q with error", tok)
			}
			if !errors.Is(err, errNoToken) && !errors.Is(err, errMalformedHeader) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		if !isB64Token(tok) || len(tok) >= len(v) || v[len(v)-len(tok):] != tok {
			t.Fatalf("parseBearer(%q) = %q", v, tok)
		}
	})
}

// FuzzPeek sends arbitrary bodies through Handler (with a fixed, valid
// token). Nothing panics; a request that reaches the next handler carries
// exactly the bytes sent; anything else gets a documented status. Each
// request gets exactly one Decision, whose labels stay within the policy,
// the MCP methods and revisions, and unlistedLabel, whatever the client sends.
func FuzzPeek(f *testing.F) {
	seeds := []string{
		// spec-auth.md §5.8
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","arguments":{"location":"Seattle, WA"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"ExampleClient","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///projects/myapp/config.json","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_sql","arguments":{"region":"us-west1","query":"SELECT * FROM users"}}}`,
		// spec-auth.md §5.9
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`,
		`{"method":"a","Method":"b"}`, `{"\u006dethod":"a","method":"b"}`, `{"method":"tools/call","params":{"name":"x","name":"y"}}`,
		`{"method":"resources/read","params":{"uri":"file:///projects/../secret"}}`,
		`{"method":"tools/call\ud800"}`, "{\"method\":\"\xff\"}", ``, `{`, `null`, `{"a":[[[[[[]]]]]]}`,
		`{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p1"},"argument":{"name":"a","value":"b"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"file:///projects/{x}"}}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), "2026-07-28", "tools/call", "get_weather")
		f.Add([]byte(s), "", "", "")
	}
	var decisions []Decision // reset by each run; runs within a process are sequential
	m := newFake(f, fakeValidator{claims: fakeClaims("mcp", "tools:call", "files:read", "res:read")}, func(c *Config) {
		c.OnDecision = func(_ context.Context, d Decision) { decisions = append(decisions, d) }
		c.MaxBodyBytes = 4096
		c.StepUpLimit = -1
		c.Operations = OperationPolicy{
			Methods:   map[string][]string{"tools/call": {"tools:call"}},
			Tools:     map[string][]string{"get_weather": {"weather:read"}},
			Prompts:   map[string][]string{"p1": {"prompts:p1"}},
			Resources: []ResourceRule{{URI: "file:///projects/", Prefix: true, Scopes: []string{"files:read"}}},
		}
	})
	methods := []string{"", unlistedLabel}
	for _, d := range methodDefaults {
		methods = append(methods, d.method)
	}
	names := []string{"", unlistedLabel, "get_weather", "p1", "file:///projects/"}
	versions := []string{"", unlistedLabel, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}
	f.Fuzz(func(t *testing.T, body []byte, version, method, name string) {
		decisions = decisions[:0]
		var got []byte
		reached := false
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached = true
			got, _ = io.ReadAll(r.Body)
			if r.ContentLength != int64(len(got)) {
				t.Errorf("ContentLength %d for %d bytes", r.ContentLength, len(got))
			}
		})
		r := httptest.NewRequest(http.MethodPost, resource, bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer x")
		for k, v := range map[string]string{"Mcp-Protocol-Version": version, "Mcp-Method": method, "Mcp-Name": name} {
			if v != "" {
				r.Header[k] = []string{v}
			}
		}
		rec := httptest.NewRecorder()
		m.Handler(next).ServeHTTP(rec, r)
		switch rec.Code {
		case http.StatusOK:
			if !reached || !bytes.Equal(got, body) {
				t.Fatalf("accepted body not passed through identically: got %q, want %q", got, body)
			}
		case http.StatusBadRequest, http.StatusForbidden, http.StatusRequestEntityTooLarge:
			if reached {
				t.Fatalf("refused with %d but next was called", rec.Code)
			}
		default:
			t.Fatalf("unexpected status %d", rec.Code)
		}
		if len(decisions) != 1 {
			t.Fatalf("%d decisions, want 1", len(decisions))
		}
		d := decisions[0]
		if want := rec.Code; d.Status != want && !(want == http.StatusOK && d.Status == 0) {
			t.Errorf("decision status %d, answered %d", d.Status, want)
		}
		if !slices.Contains(methods, d.Method) || !slices.Contains(names, d.Name) || !slices.Contains(versions, d.ProtocolVersion) {
			t.Errorf("unbounded label: method %q name %q version %q", d.Method, d.Name, d.ProtocolVersion)
		}
	})
}

// FuzzPeekAgreesWithEncodingJSON: whenever parseMessage accepts a body,
// encoding/json (case-insensitive, last duplicate wins) reads the same
// method, name, uri and protocol version. Together with the refusal of
// repeated and case-variant members, no decoder downstream can see another
// operation than the one the middleware authorized.
func FuzzPeekAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"method":"resources/read","params":{"uri":"file:///a"}}`,
		`{"METHOD":"x"}`, `{"method":"a","method":"b"}`, `{"\u006dethod":"a"}`, `{"paramſ":{"name":"x"}}`,
		`{"method":"a\u00e9","params":{"name":"\ud83d\ude00"}}`, `{"method":"a","params":[1]}`, `{"params":{"name":1}}`,
		`{"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"}}}`, `{"params":{"ref":{"type":1,"Name":"p"}}}`,
		`{"params":{"ref":"ref/prompt"}}`, `{"params":{"ref":{"type":"ref/prompt","name":"p","name":"q"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var msg message
		if parseMessage(body, &msg) != nil {
			return
		}
		var std struct {
			Method *string          `json:"method"`
			Params *json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(body, &std); err != nil {
			if msg.method.present {
				t.Fatalf("accepted, but encoding/json fails: %v", err)
			}
			return // e.g. "method" absent and another member has an odd type
		}
		if (std.Method != nil) != msg.method.present || (std.Method != nil && *std.Method != string(msg.method.v)) {
			t.Fatalf("method: encoding/json %v, middleware %q (%t)", std.Method, msg.method.v, msg.method.present)
		}
		if std.Params == nil || len(*std.Params) == 0 || (*std.Params)[0] != '{' {
			return
		}
		var params struct {
			Name *json.RawMessage `json:"name"`
			URI  *json.RawMessage `json:"uri"`
			Meta *json.RawMessage `json:"_meta"`
			Ref  *json.RawMessage `json:"ref"`
		}
		if err := json.Unmarshal(*std.Params, &params); err != nil {
			t.Fatalf("params: %v", err)
		}
		// A "_meta" that is not an object carries no version for either
		// reader: the middleware skips it (and a 2026-07-28 request then
		// lacks its version), and encoding/json fails on it (the SDK
		// refuses the request).
		var meta struct {
			Version *string `json:"io.modelcontextprotocol/protocolVersion"`
		}
		if params.Meta != nil && len(*params.Meta) > 0 && (*params.Meta)[0] == '{' {
			if err := json.Unmarshal(*params.Meta, &meta); err != nil {
				t.Fatalf("_meta: %v", err)
			}
		}
		agree := func(what string, raw *json.RawMessage, has, notString bool, val []byte) {
			if (raw != nil) != has {
				t.Fatalf("%s presence: encoding/json %t, middleware %t", what, raw != nil, has)
			}
			if raw == nil || notString {
				return
			}
			var s string
			if err := json.Unmarshal(*raw, &s); err != nil || s != string(val) {
				t.Fatalf("%s: encoding/json %q (%v), middleware %q", what, s, err, val)
			}
		}
		agree("name", params.Name, msg.name.present, msg.name.notString(), msg.name.v)
		agree("uri", params.URI, msg.uri.present, msg.uri.notString(), msg.uri.v)
		// completion/complete's reference, when it is an object.
		isRef := params.Ref != nil && len(*params.Ref) > 0 && (*params.Ref)[0] == '{'
		if isRef != msg.ref.present {
			t.Fatalf("ref object: encoding/json %t, middleware %t", isRef, msg.ref.present)
		}
		if isRef {
			var ref struct {
				Type *json.RawMessage `json:"type"`
				Name *json.RawMessage `json:"name"`
				URI  *json.RawMessage `json:"uri"`
			}
			if err := json.Unmarshal(*params.Ref, &ref); err != nil {
				t.Fatalf("ref: %v", err)
			}
			agree("ref.type", ref.Type, msg.ref.typ.present, msg.ref.typ.notString(), msg.ref.typ.v)
			agree("ref.name", ref.Name, msg.ref.name.present, msg.ref.name.notString(), msg.ref.name.v)
			agree("ref.uri", ref.URI, msg.ref.uri.present, msg.ref.uri.notString(), msg.ref.uri.v)
		}
		if meta.Version != nil {
			if !msg.version.present || *meta.Version != string(msg.version.v) {
				t.Fatalf("version: encoding/json %q, middleware %q", *meta.Version, msg.version.v)
			}
		} else if msg.version.present {
			t.Fatalf("version: middleware found one, encoding/json did not")
		}
	})
}
