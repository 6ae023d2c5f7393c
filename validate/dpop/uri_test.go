package dpop

import (
	"errors"
	"testing"
	"time"
)

func TestNormalizeURI(t *testing.T) {
	tests := []struct {
		in, want string // want "" means refused
	}{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp"},
		{"HTTPS://MCP.EXAMPLE.COM/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp"},
		{"http://127.0.0.1:80/mcp", "http://127.0.0.1/mcp"},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"},
		{"https://mcp.example.com:/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com", "https://mcp.example.com/"},
		{"https://mcp.example.com/a/./b/../mcp", "https://mcp.example.com/a/mcp"},
		{"https://mcp.example.com/%7euser/%2f", "https://mcp.example.com/~user/%2F"},
		{"https://mcp.example.com/%2E%2E/mcp", "https://mcp.example.com/mcp"},
		{"https://[::1]:443/mcp", "https://[::1]/mcp"},
		{"https://mcp.example.com/mcp?x=1", ""},
		{"https://mcp.example.com/mcp?", ""},
		{"https://mcp.example.com/mcp#x", ""},
		{"https://user@mcp.example.com/mcp", ""},
		{"ftp://mcp.example.com/mcp", ""},
		{"mailto:a@b", ""},
		{"/mcp", ""},
		{"", ""},
		{"https://mcp.example.com/%zz", ""},
		{"HTTP://:", ""},
		{"https://:443/mcp", ""},
	}
	for _, tt := range tests {
		got, ok := normalizeURI(tt.in)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("normalizeURI(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

func TestMemoryReplayStore(t *testing.T) {
	clock := now
	s := NewMemoryReplayStore(2, func() time.Time { return clock }).(*memoryReplayStore)
	claim := func(k string) (bool, error) { return s.Claim(bg, k, k, time.Minute) }
	if ok, err := claim("a"); !ok || err != nil {
		t.Fatalf("first a: %v %v", ok, err)
	}
	if ok, _ := claim("a"); ok {
		t.Fatal("second a accepted")
	}
	if ok, err := claim("b"); !ok || err != nil {
		t.Fatalf("b: %v %v", ok, err)
	}
	// Each live key is the only one of its partition: nothing may be
	// forgotten.
	if _, err := claim("c"); !errors.Is(err, errStoreFull) {
		t.Fatalf("c in a full store: err = %v, want errStoreFull", err)
	}
	clock = clock.Add(time.Minute)
	if ok, err := claim("c"); !ok || err != nil {
		t.Fatalf("c after expiry: %v %v", ok, err)
	}
	if ok, err := claim("a"); !ok || err != nil {
		t.Fatalf("a after expiry: %v %v", ok, err)
	}
	if s.len() != 2 {
		t.Errorf("Len = %d, want 2", s.len())
	}
}
