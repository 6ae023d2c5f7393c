package stdiobridge

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDirToken: {dir} in the arguments after the program and in env
// values becomes each user's own rendered directory (an absolute path);
// only the exact token is replaced, other braces stay as written, and
// the program and pass_env values are never rendered.
func TestDirToken(t *testing.T) {
	base := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("STDIOBRIDGE_PASSED", "{dir}")
	h := newHarness(t, Config{Command: []string{exe, "{dir}", "--file={dir}/data.{dir}", "{{dir}}", "{DIR}", "{ dir }", "{subject}"},
		Env:     map[string]string{"DATA_FILE": "{dir}/memory.jsonl", "GREETING": "{tenant}"},
		PassEnv: []string{"STDIOBRIDGE_PASSED"},
		Dir:     filepath.Join(base, "{subject}")})
	ctx := ctxT(t)
	for _, sub := range []string{"alice", "../bob"} {
		got, err := callText(ctx, h.connect(t, sub, nil), "args")
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(base, component(sub))
		want := fmt.Sprintf(`args=[%q %q %q "{DIR}" "{ dir }" "{subject}"] DATA_FILE=%q PASSED="{dir}"`, d, "--file="+d+"/data."+d, "{"+d+"}", d+"/memory.jsonl")
		if got != fmt.Sprintf(`{"text":%q}`, want) {
			t.Errorf("%s: args = %s\nwant text %s", sub, got, want)
		}
	}
}

// TestCheckDirToken: {dir} needs a dir, and never names the program.
func TestCheckDirToken(t *testing.T) {
	user := func(*http.Request) (User, bool) { return User{}, false }
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" when valid
	}{
		{"argument", Config{Command: []string{"srv", "{dir}"}, Dir: "/srv/{user}"}, ""},
		{"env value", Config{Command: []string{"srv"}, Env: map[string]string{"F": "{dir}/f"}, Dir: "/srv/{user}"}, ""},
		{"fixed dir", Config{Command: []string{"srv", "{dir}"}, Dir: "/srv/all"}, ""},
		{"other braces without dir", Config{Command: []string{"srv", "{DIR}", "{ dir }", "{user}"}, Env: map[string]string{"F": "{user}"}}, ""},
		{"no escape", Config{Command: []string{"srv", "{{dir}}"}}, "command: an argument names {dir}, which needs dir"},
		{"argument without dir", Config{Command: []string{"srv", "-root={dir}"}}, "command: an argument names {dir}, which needs dir"},
		{"env value without dir", Config{Command: []string{"srv"}, Env: map[string]string{"B": "x", "A": "{dir}/f"}}, "env: A names {dir}, which needs dir"},
		{"program", Config{Command: []string{"{dir}/srv"}, Dir: "/srv/{user}"}, "{dir} is not allowed in the program"},
		{"in dir", Config{Command: []string{"srv"}, Dir: "/srv/{dir}"}, "whole path component"},
	} {
		tc.cfg.User = user
		err := Check(tc.cfg)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrConfig with %q", tc.name, err, tc.want)
		}
	}
}
