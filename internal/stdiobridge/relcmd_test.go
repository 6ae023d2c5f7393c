package stdiobridge

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttackRelativeCommand: a program named by a relative path
// ("./srv", "bin/srv") is the one New found, relative to the proxy's
// working directory, never a file of that name in the child's
// directory: that is the user's (a filesystem server lets him write
// there), and running it would run the user's program as the proxy's OS
// user. (exec.Cmd takes a relative Path relative to Dir: the configured
// server never started, 502 for everyone, and a planted one ran.)
func TestAttackRelativeCommand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "srv")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(bin)
	users := t.TempDir()
	h := newHarness(t, Config{Command: []string{"./srv"}, Dir: filepath.Join(users, "{subject}")})
	marker := filepath.Join(t.TempDir(), "planted-ran")
	for round := range 2 {
		a := post(t, h, "alice", "", initBody)
		if a.status != http.StatusOK || !strings.Contains(a.last(), `"name":"counter"`) {
			t.Errorf("round %d: initialize: %d %v, want 200 from the configured server", round, a.status, a.msgs)
		}
		// alice plants an executable "srv" in her own directory.
		planted := "#!/bin/sh\ntouch " + marker + "\n"
		if err := os.WriteFile(filepath.Join(users, "alice", "srv"), []byte(planted), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the program alice planted in her directory ran")
	}
}
