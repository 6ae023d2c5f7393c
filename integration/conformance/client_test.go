package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// clientRevisions are the dated revisions an auth/* client scenario is run
// at, when its tags list them; a scenario tagged with neither (an
// extension, or 2025-03-26 only) runs once at the suite's default.
var clientRevisions = []string{"2025-11-25", "2026-07-28"}

// clientWorkers bounds the suite processes run at once (2 cores shared).
const clientWorkers = 3

// clientRun is one run of a client scenario.
type clientRun struct {
	scenario, revision string // revision "" is the suite's default
	idx                int
	res                outcome
	ok                 bool // the suite's verdict with expected-failures.yml
	log                string
	took               time.Duration
}

// TestConformanceClient runs every auth/* client scenario of the pinned
// suite against mcpguard's client side (the program in ./client), with
// expected-failures.yml as the suite's --expected-failures, and generates
// the client section of docs/conformance.md.
func TestConformanceClient(t *testing.T) {
	if os.Getenv("MCPGUARD_CONFORMANCE") == "" {
		t.Skip("set MCPGUARD_CONFORMANCE=1 to run the MCP conformance suite (docs/conformance.md)")
	}
	node, _ := filepath.Abs("node_modules/.bin/node")
	suite, _ := filepath.Abs("node_modules/@modelcontextprotocol/conformance/dist/index.js")
	for _, f := range []string{node, suite} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s missing: run npm ci in integration/conformance (%v)", f, err)
		}
	}
	version := suiteVersion(t)
	expected, _ := filepath.Abs("expected-failures.yml")
	reasons := expectedReasons(t, expected)
	dir := t.TempDir()
	bin := filepath.Join(dir, "client")
	if out, err := exec.Command("go", "build", "-o", bin, "./client").CombinedOutput(); err != nil {
		t.Fatalf("go build ./client: %v\n%s", err, out)
	}

	scenarios := clientScenarios(t, node, suite)
	var runs []*clientRun
	for _, sc := range scenarios {
		var revs []string
		for _, r := range clientRevisions {
			if slices.Contains(sc.tags, r) {
				revs = append(revs, r)
			}
		}
		if len(revs) == 0 {
			revs = []string{""}
		}
		for _, r := range revs {
			runs = append(runs, &clientRun{scenario: sc.name, revision: r, idx: len(runs)})
		}
	}
	for name := range reasons {
		if !slices.ContainsFunc(scenarios, func(s clientScenario) bool { return s.name == name }) {
			t.Errorf("expected-failures.yml lists %s, which the suite does not have", name)
		}
	}

	start := time.Now()
	work := make(chan *clientRun)
	var wg sync.WaitGroup
	for range clientWorkers {
		wg.Go(func() {
			for r := range work {
				runClientScenario(t, node, suite, bin, expected, filepath.Join(dir, fmt.Sprint("run-", r.idx)), r)
			}
		})
	}
	for _, r := range runs {
		work <- r
	}
	close(work)
	wg.Wait()
	t.Logf("%d client scenario runs in %v", len(runs), time.Since(start).Round(time.Second))

	failed := false
	for _, r := range runs {
		_, listed := reasons[r.scenario]
		switch {
		case !r.ok:
			failed = true
			t.Errorf("%s %s: %v, listed in expected-failures.yml: %v; first failure: %s\n%s", r.scenario, r.revision, r.res, listed, r.res.firstFailure, r.log)
		case r.res.fail > 0 && !listed:
			failed = true
			t.Errorf("%s %s: %v but the suite passed it", r.scenario, r.revision, r.res)
		}
	}
	checkDocSection(t, "client", renderClient(version, scenarios, runs, reasons), !failed)
}

// clientScenario is a client scenario of the suite and its tags.
type clientScenario struct {
	name string
	tags []string
}

var listLine = regexp.MustCompile(`^  - (auth/\S+) \[([^\]]*)\]$`)

// clientScenarios lists the suite's auth/* client scenarios, in its order.
func clientScenarios(t *testing.T, node, suite string) []clientScenario {
	out, err := exec.Command(node, suite, "list").CombinedOutput()
	if err != nil {
		t.Fatalf("suite list: %v\n%s", err, out)
	}
	var list []clientScenario
	inClient := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, " ") {
			inClient = strings.HasPrefix(line, "Client scenarios")
			continue
		}
		if m := listLine.FindStringSubmatch(line); inClient && m != nil {
			list = append(list, clientScenario{m[1], strings.Split(m[2], ",")})
		}
	}
	if len(list) == 0 {
		t.Fatalf("suite list: no auth/* client scenarios:\n%s", out)
	}
	return list
}

// expectedReasons reads expected-failures.yml: each "  - scenario" entry
// of the client list with the comment lines above it as its reason.
func expectedReasons(t *testing.T, path string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	var comment []string
	inClient := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		trimmed := strings.TrimSpace(line)
		switch {
		case line == "client:":
			inClient, comment = true, nil
		case !strings.HasPrefix(line, " ") && trimmed != "" && !strings.HasPrefix(trimmed, "#"):
			inClient = false
		case inClient && strings.HasPrefix(trimmed, "#"):
			comment = append(comment, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
		case inClient && strings.HasPrefix(trimmed, "- "):
			name := strings.TrimSpace(strings.TrimPrefix(trimmed, "- "))
			if len(comment) == 0 {
				t.Errorf("expected-failures.yml: %s has no reason (comment lines above it)", name)
			}
			reasons[name] = strings.Join(comment, " ")
			comment = nil
		}
	}
	return reasons
}

// runClientScenario runs r with the suite and reads its checks.
func runClientScenario(t *testing.T, node, suite, bin, expected, out string, r *clientRun) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{suite, "client", "--command", bin, "--scenario", r.scenario, "--expected-failures", expected, "-o", out}
	if r.revision != "" {
		args = append(args, "--spec-version", r.revision)
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, node, args...)
	log, err := cmd.CombinedOutput()
	r.took, r.log, r.ok = time.Since(start), string(log), err == nil && ctx.Err() == nil
	r.res = outcome{status: map[string]string{}}
	var found []string
	_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "checks.json" {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		r.ok = false
		r.res.firstFailure = fmt.Sprintf("%d checks.json files written", len(found))
		return
	}
	b, err := os.ReadFile(found[0])
	var checks []check
	if err == nil {
		err = json.Unmarshal(b, &checks)
	}
	if err != nil {
		r.ok = false
		r.res.firstFailure = err.Error()
		return
	}
	for _, c := range checks {
		r.res.status[c.ID] = c.Status
		switch c.Status {
		case "SUCCESS":
			r.res.pass++
		case "FAILURE", "WARNING":
			r.res.fail++
			if r.res.firstFailure == "" {
				r.res.firstFailure = c.ID + ": " + c.ErrorMessage
			}
		}
	}
}

// renderClient writes the client section of docs/conformance.md.
func renderClient(version string, scenarios []clientScenario, runs []*clientRun, reasons map[string]string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `## Client: mcpguard's client side

Generated by `+"`MCPGUARD_CONFORMANCE=1 MCPGUARD_CONFORMANCE_UPDATE=1 go test -run TestConformanceClient ./integration/conformance/`"+`;
do not edit by hand. Every `+"`auth/*`"+` client scenario of
`+"`@modelcontextprotocol/conformance@%s`"+`, with the suite's
`+"`--expected-failures integration/conformance/expected-failures.yml`"+`, against
`+"`integration/conformance/client`"+`: the go-sdk client over `+"`client.Transport`"+`
with `+"`client.ClientCredentials`"+` (client credentials extension) or a small
authorization code flow on x/oauth2 and `+"`asmeta`"+` (everything else). A
scenario tagged with 2025-11-25 or 2026-07-28 runs at each (`+"`--spec-version`"+`);
the others (extensions, 2025-03-26) once, at the suite's default. The test
fails on a failure not listed in the file and on a listed scenario that
passes.

Cells are passed/total checks (warnings count as failures); ✗ marks a
failing scenario, — a revision the scenario does not apply to.

| scenario | 2025-11-25 | 2026-07-28 | other |
|---|---|---|---|
`, version)
	cell := map[string]string{}
	for _, r := range runs {
		col := r.revision
		if col == "" {
			col = "other"
		}
		cell[r.scenario+" "+col] = r.res.String()
	}
	pass, total := 0, 0
	for _, r := range runs {
		total++
		if r.res.fail == 0 {
			pass++
		}
	}
	for _, sc := range scenarios {
		fmt.Fprintf(&b, "| %s |", sc.name)
		for _, col := range []string{"2025-11-25", "2026-07-28", "other"} {
			v, ok := cell[sc.name+" "+col]
			if !ok {
				v = "—"
			}
			fmt.Fprintf(&b, " %s |", v)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n%d of %d runs pass. Expected failures (expected-failures.yml):\n\n", pass, total)
	var names []string
	for n := range reasons {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "- `%s`: %s\n", n, strings.ReplaceAll(reasons[n], "|", "\\|"))
	}
	return b.Bytes()
}
