package middleware

import (
	"net/http"
	"testing"
)

// TestCanonicalID: ids a server may take for the same request share one
// canonical text; others do not.
func TestCanonicalID(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{`1`, `1`, true},
		{`1`, `"1"`, true}, // mcp-go formats both with %v
		{`1`, `1.0`, true},
		{`1`, `1e0`, true},
		{`100`, `1E2`, true},
		{`-0`, `0`, true},
		{`"\u0031"`, `1`, true},
		{`"a"`, `"\u0061"`, true},
		{`1234567`, `"1.234567e+06"`, true},
		{`1e300`, `"1e+300"`, true},
		{`1`, `2`, false},
		{`"a"`, `"A"`, false},
		{`"1.0"`, `"1"`, true}, // coarser than any server: fine
		{`"x1"`, `1`, false},
	} {
		ca, oka := canonicalID(nil, []byte(tc.a))
		cb, okb := canonicalID(nil, []byte(tc.b))
		if !oka || !okb || (string(ca) == string(cb)) != tc.same {
			t.Errorf("%s -> %q (%v), %s -> %q (%v), want same=%v", tc.a, ca, oka, tc.b, cb, okb, tc.same)
		}
	}
	for _, raw := range []string{``, `null`, `true`, `{}`, `[1]`} {
		if c, ok := canonicalID(nil, []byte(raw)); ok {
			t.Errorf("%s -> %q, want no id", raw, c)
		}
	}
}

// TestInflightCancel: a cancellation passes only for a request in flight
// in its scope for its principal alone.
func TestInflightCancel(t *testing.T) {
	tab := newInflightTable()
	alice := &Principal{Issuer: "i", Subject: "alice", Tenant: "a"}
	bob := &Principal{Issuer: "i", Subject: "bob", Tenant: "b"}
	legacy := http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}
	modern := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}}
	req := func(id, sid string) *message {
		return &message{method: stringField("tools/call"), id: []byte(id), sid: sid}
	}
	cancel := func(id, sid string) *message {
		return &message{method: stringField(methodCancelled), sid: sid,
			body: []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`)}
	}
	ka, _ := tab.start(legacy, alice, req("1", ""))
	kb, _ := tab.start(legacy, bob, req("7", "s-bob"))
	km, _ := tab.start(modern, alice, req(`"m"`, "s-alice"))
	for _, tc := range []struct {
		name string
		h    http.Header
		p    *Principal
		msg  *message
		want bool
	}{
		{"alice, her sessionless id", legacy, alice, cancel("1", ""), true},
		{"alice, her id as a string", legacy, alice, cancel(`"1"`, ""), true},
		{"bob, alice's sessionless id", legacy, bob, cancel("1", ""), false},
		{"bob, alice's id as a string", legacy, bob, cancel(`"1"`, ""), false},
		{"bob, his id in his session", legacy, bob, cancel("7", "s-bob"), true},
		{"bob, his id without his session", legacy, bob, cancel("7", ""), false},
		{"alice, bob's id in her session", legacy, alice, cancel("7", "s-alice"), false},
		{"alice, her modern id, any session header", modern, alice, cancel(`"m"`, "s-other"), true},
		{"bob, alice's modern id", modern, bob, cancel(`"m"`, "s-bob"), false},
		{"no id", legacy, alice, &message{sid: "", body: []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`)}, false},
		{"case-variant name", legacy, alice, &message{body: []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"RequestId":2}}`)}, false},
	} {
		if got := tab.mayCancel(tc.h, tc.p, tc.msg); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// Bob's request with alice's sessionless id: neither may cancel it
	// (the server holds one of them under that id).
	kb2, _ := tab.start(legacy, bob, req(`"1"`, ""))
	if tab.mayCancel(legacy, alice, cancel("1", "")) || tab.mayCancel(legacy, bob, cancel("1", "")) {
		t.Error("a shared id was cancellable")
	}
	for _, k := range []uint64{ka, kb, km, kb2} {
		tab.end(k)
	}
	if len(tab.m) != 0 {
		t.Errorf("%d entries left", len(tab.m))
	}
	if tab.mayCancel(legacy, alice, cancel("1", "")) {
		t.Error("a finished request was cancellable")
	}
}
