package stdiobridge

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pdeathEnv makes the test binary a stand-in for the proxy (pdeathMain)
// whose child is marked with its value.
const pdeathEnv = "STDIOBRIDGE_PDEATH"

// pdeathMain starts a child as the bridge does (sleep, which never reads
// its stdin, so its EOF does not end it), prints its pid and waits to be
// killed.
func pdeathMain() {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	c, err := startChild([]string{sleep, "600"}, []string{markEnv + "=" + os.Getenv(pdeathEnv)}, "", false, time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("started", c.cmd.Process.Pid)
	time.Sleep(time.Hour)
}

// TestParentDeathEndsChild: when the proxy is killed (SIGKILL: it stops
// nothing), its children die with it (Pdeathsig) instead of running on.
func TestParentDeathEndsChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	mark := hex.EncodeToString(b[:])
	t.Cleanup(func() {
		for _, pid := range marked(t, mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	proxy := exec.Command(os.Args[0], "-test.run=^$")
	proxy.Env = append(os.Environ(), pdeathEnv+"="+mark)
	out, err := proxy.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		s.Scan()
		line <- s.Text()
	}()
	var pid int
	select {
	case l := <-line:
		p, err := strconv.Atoi(strings.TrimPrefix(l, "started "))
		if err != nil {
			t.Fatalf("stand-in proxy said %q", l)
		}
		pid = p
	case <-time.After(60 * time.Second):
		_ = proxy.Process.Kill()
		t.Fatal("stand-in proxy started no child within 60 s")
	}
	if got := marked(t, mark); !slices.Contains(got, pid) {
		t.Fatalf("child %d not running before the proxy's death: %v", pid, got)
	}
	_ = proxy.Process.Kill()
	_ = proxy.Wait()
	// The child dies at once; the bound only ends a failing test.
	deadline := time.Now().Add(10 * time.Second)
	for len(marked(t, mark)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still running 10 s after its proxy was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
