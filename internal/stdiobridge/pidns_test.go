package stdiobridge

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// markEnv tags the processes a test's children start (hostile's
// grandchild passes it on), so that the test can find them in /proc.
const markEnv = "STDIOBRIDGE_MARK"

// marked returns the live processes whose environment has markEnv=mark.
func marked(t *testing.T, mark string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("/proc: %v", err)
	}
	want := []byte(markEnv + "=" + mark)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// TestPIDNamespaceEndsDescendants: a descendant of a child that left its
// process group (setsid) and holds its stdout outlives the child's
// session in the proxy's PID namespace (the documented limit, shown
// first); with PIDNamespace it ends with the child.
func TestPIDNamespaceEndsDescendants(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("PID namespaces are Linux's")
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	probe := exec.Command(truePath)
	setPIDNamespace(probe)
	if err := probe.Run(); errors.Is(err, syscall.EPERM) {
		t.Skipf("no PID namespace for this process (it needs CAP_SYS_ADMIN): %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	for _, pidns := range []bool{false, true} {
		var b [8]byte
		_, _ = rand.Read(b[:])
		mark := hex.EncodeToString(b[:])
		h := newHostile(t, Config{PIDNamespace: pidns, StopGrace: 200 * time.Millisecond, Env: map[string]string{markEnv: mark}}, nil)
		sid := open(t, h, "alice")
		if len(marked(t, mark)) != 1 {
			t.Fatalf("pidns %v: %v marked before the grandchild, want the child alone", pidns, marked(t, mark))
		}
		if a := tool(t, h, "alice", sid, "grandchild", ""); a.status != 200 {
			t.Fatalf("pidns %v: grandchild: %d %v", pidns, a.status, a.msgs)
		}
		waitFor(t, func() bool { return h.b.Children() == 0 })
		if !pidns {
			left := marked(t, mark)
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			if len(left) != 1 {
				t.Fatalf("without a PID namespace: %v left, want the setsid grandchild", left)
			}
			continue
		}
		waitFor(t, func() bool { return len(marked(t, mark)) == 0 })
	}
}
