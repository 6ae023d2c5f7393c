package versioncmd

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"testing"
)

// TestWrite: the module version, the revision with its modified mark, the
// commit time and the Go version, each on its own line; unknown fields
// say so.
func TestWrite(t *testing.T) {
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"clone build", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/mcpguard/mcpguard", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "3a7e6f0"}, {Key: "vcs.time", Value: "2026-12-04T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"mcpguard (devel)\n  revision: 3a7e6f0 (modified)\n  committed: 2026-12-04T12:00:00Z\n  go: go1.26.0\n"},
		{"go install", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.3.0"}},
			"mcpguard v0.3.0\n  revision: (unknown)\n  go: go1.26.1\n"},
		{"no build info", nil, "mcpguard (unknown)\n  revision: (unknown)\n  go: (unknown)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			write(&b, tt.bi)
			if b.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

// TestRun: the test binary's own build information names the running Go
// version; an argument is a usage error.
func TestRun(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Run(context.Background(), nil, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if want := "  go: " + runtime.Version() + "\n"; !bytes.Contains(out.Bytes(), []byte(want)) {
		t.Errorf("stdout %q, want it to contain %q", out.String(), want)
	}
	if code := Run(context.Background(), []string{"extra"}, nil, &out, &errOut); code != 2 {
		t.Errorf("exit %d with an argument, want 2", code)
	}
}
