// Package exampleproc runs the example server (examples/mcpserver) as a
// program for the integration test packages: built once per top-level
// test with the test's -race, on free loopback ports, stopped with the
// test.
package exampleproc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Binary builds examples/mcpserver into a temporary directory of t
// (removed with it) and returns its path. It is built with -race when the
// tests are, so that it reuses the build cache of their dependencies: then
// only the link runs (about a second). Call it once per top-level test.
func Binary(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcpserver")
	args := []string{"build", "-o", path}
	if Race {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "github.com/mcpguard/mcpguard/examples/mcpserver")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build examples/mcpserver: %v\n%s", err, out)
	}
	return path
}

// Example is a running examples/mcpserver process.
type Example struct {
	MCPURL string // the MCP endpoint, the resource
	Issuer string // the authorization server it trusts
	Stderr *SyncBuf
}

// SyncBuf is a bytes.Buffer safe for a writer goroutine and readers.
type SyncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start runs the example server bin (see Binary) with args (free loopback ports are
// added unless args choose them) and env (NAME=value, added to a clean
// environment without MCPGUARD_* variables), waits until it prints its
// endpoints, and stops it (SIGINT) when the test ends.
func Start(t *testing.T, bin string, env []string, args ...string) *Example {
	t.Helper()
	args = append([]string{"-addr", "127.0.0.1:0", "-dev-as-addr", "127.0.0.1:0", "-log-level", "warn"}, args...)
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPGUARD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start example: %v", err)
	}
	e := &Example{Stderr: &SyncBuf{}}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(e.Stderr, line)
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "MCP endpoint (resource):"); ok {
				e.MCPURL = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "authorization server:"); ok {
				e.Issuer = strings.TrimSpace(v)
				close(ready)
			}
		}
		_, _ = io.Copy(e.Stderr, pr)
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("example server output:\n%s", e.Stderr)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("example server exited before it was ready: %v\n%s", err, e.Stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("example server not ready after 30s:\n%s", e.Stderr)
	}
	return e
}
