package middleware

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// FuzzPublic: a tokenless POST with any body is either served, to the
// anonymous principal with the body unchanged, and then encoding/json
// reads the same public operation from it; or refused with exactly the
// 401 challenge; or, when it is not one well-formed JSON-RPC message, with
// the 400 or 413 a token would get, without running the handler. Nothing
// else, and never a panic.
func FuzzPublic(f *testing.F) {
	for _, s := range []string{
		rpcBody(legacyRev, "ping", ""), rpcBody(legacyRev, "tools/call", "hello"), rpcBody(legacyRev, "tools/call", "get_weather"),
		rpcBody(legacyRev, "prompts/get", "intro"), rpcBody(legacyRev, "resources/read", "file:///public/readme"),
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`, `{"method":"Ping"}`, `{"Method":"ping"}`,
		`[{"method":"ping"}]`, `{"method":"tools/call","params":{"name":"hello","Name":"x"}}`,
		`{"method":"tools/call","params":{"name":"hel\u006co"}}`, `{"method":"tools/call","params":{"name":1}}`, "", "a=b", "null",
	} {
		f.Add([]byte(s))
	}
	m := newFake(f, fakeValidator{claims: fakeClaims("mcp")}, func(c *Config) {
		c.Operations.Public = testPublic
		c.MaxBodyBytes = 4096
	})
	f.Fuzz(func(t *testing.T, body []byte) {
		var got []byte
		var anon bool
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, ok := PrincipalFromContext(r.Context())
			anon = ok && p.Anonymous && p.Subject == "" && p.Scopes == nil
			got, _ = io.ReadAll(r.Body)
		}))
		r := httptest.NewRequest(http.MethodPost, resource, bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case http.StatusUnauthorized:
			if got != nil || w.Header().Get("WWW-Authenticate") != noTokenChallenge {
				t.Fatalf("401 with challenge %q, handler ran: %v", w.Header().Get("WWW-Authenticate"), got != nil)
			}
			return
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			if got != nil || w.Header().Get("WWW-Authenticate") != "" {
				t.Fatalf("%d with challenge %q, handler ran: %v", w.Code, w.Header().Get("WWW-Authenticate"), got != nil)
			}
			var probe message
			if w.Code == http.StatusBadRequest && parseMessage(body, &probe) == nil {
				t.Fatalf("400 for a body the peek parses: %s", w.Body)
			}
			return
		case http.StatusOK:
		default:
			t.Fatalf("status %d", w.Code)
		}
		if !anon || !bytes.Equal(got, body) {
			t.Fatalf("served: anonymous %v, body changed %v", anon, !bytes.Equal(got, body))
		}
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"params"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Fatalf("served a body encoding/json refuses: %v", err)
		}
		var ok bool
		switch msg.Method {
		case "tools/call":
			ok = slices.Contains(testPublic.Tools, msg.Params.Name)
		case "prompts/get":
			ok = slices.Contains(testPublic.Prompts, msg.Params.Name)
		case "resources/read":
			ok = slices.Contains(testPublic.Resources, msg.Params.URI)
		default:
			ok = slices.Contains(testPublic.Methods, msg.Method)
		}
		if !ok {
			t.Fatalf("served %q %q %q, which is not public", msg.Method, msg.Params.Name, msg.Params.URI)
		}
	})
}
