// Package redistest starts a real redis-server for tests: on 127.0.0.1,
// on a free port, in a temporary directory, without persistence, killed
// when the test ends. Tests skip when the binary is absent, except under
// CI (the CI environment variable set), where they fail: .ci/run installs
// Debian's redis-server package.
//
// NOT for use outside of tests.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// startTimeout bounds how long Start waits for the server to answer PING.
const startTimeout = 10 * time.Second

// Server is a running redis-server.
type Server struct {
	// Addr is host:port, on 127.0.0.1.
	Addr string

	cmd      *exec.Cmd
	stopOnce sync.Once
	done     chan struct{}
}

// Binary returns the path of redis-server, or "" if it is not installed.
func Binary() string {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/local/bin/redis-server"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return ""
}

// Start starts a server for t and registers its kill with t.Cleanup. It
// skips t when redis-server is missing, unless CI is set.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("redistest: redis-server not found; CI must install it (apt-get install redis-server)")
		}
		t.Skip("redistest: redis-server not installed (apt-get install redis-server)")
	}
	var lastErr error
	for range 3 { // a free port can be taken between the probe and the bind
		s, err := start(t, bin)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("redistest: %v", lastErr)
	return nil
}

func start(t testing.TB, bin string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	cmd := exec.Command(bin,
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--dir", dir,
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "yes",
		"--daemonize", "no",
		"--logfile", "",
		"--loglevel", "warning",
		"--databases", "1",
		"--maxmemory", "64mb",
	)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(s.Stop)
	deadline := time.Now().Add(startTimeout)
	for {
		if ping(s.Addr) == nil {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("redis-server exited: %s", strings.TrimSpace(out.String()))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("redis-server on %s did not answer PING within %v: %s", s.Addr, startTimeout, out.String())
		}
	}
}

// Stop kills the server and waits for it to exit. It is idempotent; a
// test calls it to simulate an outage.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
	})
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ping sends one inline PING.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
