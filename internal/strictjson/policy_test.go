package strictjson_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestOneJSONReader fails when a non-test Go file of the module decodes
// JSON with encoding/json or go-json-experiment/json (Unmarshal,
// UnmarshalRead, UnmarshalDecode, NewDecoder, under whatever import name)
// instead of through internal/strictjson, outside jsonReadExceptions. It
// finds candidate calls with git grep and resolves the import name of
// each from the file's imports.
func TestOneJSONReader(t *testing.T) {
	// jsonReadExceptions are the files outside tests that may decode JSON
	// other than through this package, with the number of such calls each
	// holds and why (docs/jose.md, "What is left on encoding/json"). A new
	// call in one of them fails TestOneJSONReader as well: update the count
	// and the reason deliberately, and the docs with them.
	jsonReadExceptions := map[string]struct {
		calls int
		why   string
	}{
		"internal/strictjson/strictjson.go":     {3, "the reader itself (go-json-experiment/json and its jsontext tokenizer)"},
		"prm/strictjson.go":                     {2, "prm is a standard-library leaf: its own checker of the same policy, on encoding/json's tokenizer, held to this package by FuzzCheckJSONAgreesWithStrictJSON"},
		"prm/parse.go":                          {1, "decodes a document prm's checker accepted (no repeated name, no case variant of a member read)"},
		"internal/clientrecord/clientrecord.go": {1, "store records of cimd clients that mcpguard wrote itself (cimd, cimd/boltstore, redisstore, devas)"},
		"devas/consent.go":                      {1, "the development authorization server's consent form, HMAC-checked before it is read"},
		"caddy/mcpguard.go":                     {1, "the Caddy module tells whether its `config` (operator configuration Caddy has already decoded as JSON) is a JSON string of YAML or an object; the YAML itself goes through proxy.Parse"},
		"internal/apidump/dump.go":              {1, "the API file generator reads the go command's own `go list -json` stream (a sequence of objects), not untrusted input"},
	}

	// jsonDecoders are the packages whose Unmarshal and NewDecoder read JSON.
	jsonDecoders := map[string]bool{
		"encoding/json":                               true,
		"github.com/go-json-experiment/json":          true,
		"github.com/go-json-experiment/json/jsontext": true,
	}
	git, err := exec.LookPath("git")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git not found; CI must have it")
		}
		t.Skip("git not found")
	}
	top, err := exec.Command(git, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git rev-parse: %v (CI runs on a clone)", err)
		}
		t.Skip("not in a git checkout")
	}
	root := strings.TrimSpace(string(top))
	out, err := exec.Command(git, "-C", root, "grep", "-n", "-E",
		`[A-Za-z_][A-Za-z0-9_]*\.(Unmarshal|UnmarshalRead|UnmarshalDecode|NewDecoder)\(`,
		"--", "*.go", ":!*_test.go").Output()
	if err != nil {
		t.Fatalf("git grep: %v", err) // exit status 1 (no match) is impossible: strictjson.go matches
	}
	call := regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\.(Unmarshal|UnmarshalRead|UnmarshalDecode|NewDecoder)\(`)
	imports := map[string]map[string]string{} // file -> import name -> path
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		file, rest, _ := strings.Cut(line, ":")
		lineNo, code, _ := strings.Cut(rest, ":")
		if c := strings.TrimSpace(code); strings.HasPrefix(c, "//") {
			continue // a comment
		}
		names, ok := imports[file]
		if !ok {
			names = importNames(t, filepath.Join(root, file))
			imports[file] = names
		}
		for _, m := range call.FindAllStringSubmatch(code, -1) {
			if !jsonDecoders[names[m[1]]] {
				continue
			}
			counts[file]++
			if _, ok := jsonReadExceptions[file]; !ok {
				t.Errorf("%s:%s: %s.%s of %s: read JSON through internal/strictjson (or add a documented exception to jsonReadExceptions and docs/jose.md)",
					file, lineNo, m[1], m[2], names[m[1]])
			}
		}
	}
	for file, ex := range jsonReadExceptions {
		if counts[file] != ex.calls {
			t.Errorf("%s: %d JSON decoding calls, the exception allows %d (%s): update the count and docs/jose.md deliberately",
				file, counts[file], ex.calls, ex.why)
		}
	}
}

// importNames returns the import name of each import of file.
func importNames(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	names := map[string]string{}
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:] // right for the JSON packages
		if im.Name != nil {
			name = im.Name.Name
		}
		names[name] = path
	}
	return names
}
