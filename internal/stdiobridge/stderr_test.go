package stdiobridge

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStderrBounded: a child that writes many stderr lines gets its
// first stderrBurst logged and the rest counted ("dropped", with the last
// one), not a log line each: every line is logged or counted, no more
// are logged than the limiter allows in the time the flood took, and the
// last line of a child that exits (why it crashed) is in the log even
// though it came in a flood, read before the pipe is closed.
func TestStderrBounded(t *testing.T) {
	const lines = 3000
	for _, tc := range []struct {
		tool  string
		lines int // written to stderr
	}{
		{"stderr_lines", lines},
		{"stderr_exit", lines + 1}, // and "last words on stderr", then exit 3
	} {
		t.Run(tc.tool, func(t *testing.T) {
			h := newHostile(t, Config{}, nil)
			sid := open(t, h, "alice")
			start := time.Now()
			a := tool(t, h, "alice", sid, tc.tool, `{"n":`+strconv.Itoa(lines)+`}`)
			if tc.tool == "stderr_lines" && a.text() != "stderr written" {
				t.Fatalf("%s: %d %v", tc.tool, a.status, a.msgs)
			}
			// The child's stderr is read to its end before the bridge
			// closes it.
			_ = h.b.Close()
			took := time.Since(start)
			log := h.log.String()
			logged := strings.Count(log, "stderr line ") - strings.Count(log, `last="stderr line `)
			dropped := 0
			for _, m := range regexp.MustCompile(`stderr lines dropped".* dropped=(\d+)`).FindAllStringSubmatch(log, -1) {
				n, _ := strconv.Atoi(m[1])
				dropped += n
			}
			if tc.tool == "stderr_exit" {
				logged += strings.Count(log, `line="last words on stderr"`)
				if !strings.Contains(log, `last words on stderr`) {
					t.Errorf("the crashed child's last stderr line is not in the log")
				}
			}
			if logged+dropped != tc.lines {
				t.Errorf("logged %d + dropped %d = %d stderr lines, want all %d accounted for", logged, dropped, logged+dropped, tc.lines)
			}
			if most := stderrBurst + int(stderrRate*(took.Seconds()+1)); logged > most {
				t.Errorf("logged %d of %d stderr lines in %v, want at most %d (burst %d, %d a second)", logged, tc.lines, took, most, stderrBurst, stderrRate)
			}
			if logged < stderrBurst {
				t.Errorf("logged %d stderr lines, want at least the burst of %d", logged, stderrBurst)
			}
		})
	}
}
