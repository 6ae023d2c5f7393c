package proxy

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// MaxConfigBytes bounds a configuration file.
const MaxConfigBytes = 1 << 20

// maxSecretBytes bounds a secret file.
const maxSecretBytes = 64 << 10

// Load reads the YAML configuration file at path ([Parse]).
func Load(path string, getenv func(string) string) (Config, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if fi.Size() > MaxConfigBytes {
		return Config{}, fmt.Errorf("%w: %s: larger than %d bytes", ErrConfig, path, MaxConfigBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return Parse(path, b, getenv)
}

// Parse decodes a YAML configuration (the schema is [Config]; name is the
// file name for errors). It refuses, naming file, line, column and key:
// a key the schema does not have, a value of the wrong type, a key given
// twice in one mapping, and an inline secret (a key such as
// client_secret or password: secrets come only from the environment,
// *_env, or from files, *_file, which Parse reads). The semantic checks
// are [New]'s. Errors wrap [ErrConfig].
func Parse(name string, data []byte, getenv func(string) string) (Config, error) {
	var c Config
	if len(data) > MaxConfigBytes {
		return c, fmt.Errorf("%w: %s: larger than %d bytes", ErrConfig, name, MaxConfigBytes)
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		// For the key path of the error: the same document, duplicates
		// allowed.
		f2, _ := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey())
		return c, yamlError(name, f2, err)
	}
	if err := inlineSecrets(name, f); err != nil {
		return c, err
	}
	if err := yaml.UnmarshalWithOptions(data, &c, yaml.Strict()); err != nil {
		return Config{}, yamlError(name, f, err)
	}
	for i := range c.Routes {
		ex := &c.Routes[i].Identity.Exchange
		at := fmt.Sprintf("routes[%d].identity.exchange", i)
		s, err := secret(at+".client_secret", ex.ClientSecretEnv, ex.ClientSecretFile, getenv)
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: %w", ErrConfig, name, err)
		}
		ex.ClientSecret = s
	}
	return c, nil
}

// secret reads a secret from the environment variable env or the file
// file; at most one may be set, none gives "".
func secret(field, env, file string, getenv func(string) string) (string, error) {
	switch {
	case env != "" && file != "":
		return "", fmt.Errorf("%s: set %s_env or %s_file, not both", field, field, field)
	case env != "":
		v := getenv(env)
		if v == "" {
			return "", fmt.Errorf("%s_env: the environment variable %s is empty or unset", field, env)
		}
		return v, nil
	case file != "":
		fi, err := os.Stat(file)
		if err != nil {
			return "", fmt.Errorf("%s_file: %w", field, err)
		}
		if fi.Size() > maxSecretBytes {
			return "", fmt.Errorf("%s_file %s: larger than %d bytes", field, file, maxSecretBytes)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s_file: %w", field, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("%s_file %s: empty", field, file)
		}
		return v, nil
	}
	return "", nil
}

// secretKey matches the keys of inline secrets.
var secretKey = regexp.MustCompile(`(?i)(secret|password|passwd|private_key|api_key|token)$`)

// inlineSecrets refuses a mapping key that holds a secret inline.
func inlineSecrets(name string, f *ast.File) error {
	var err error
	walkKeys(f, func(path string, k *ast.MappingValueNode) bool {
		key := k.Key.String()
		if secretKey.MatchString(key) && !strings.HasSuffix(key, "_env") && !strings.HasSuffix(key, "_file") {
			tk := k.Key.GetToken()
			err = fmt.Errorf("%w: %s:%d:%d: %s: secrets are never inline; use %s_env (an environment variable's name) or %s_file (a file's path)",
				ErrConfig, name, tk.Position.Line, tk.Position.Column, path, key, key)
			return false
		}
		return true
	})
	return err
}

// walkKeys calls fn for every mapping entry of f with its key path
// ("routes[0].upstream"), until fn returns false.
func walkKeys(f *ast.File, fn func(path string, k *ast.MappingValueNode) bool) {
	var walk func(n ast.Node, path string) bool
	walk = func(n ast.Node, path string) bool {
		switch n := n.(type) {
		case *ast.DocumentNode:
			return walk(n.Body, path)
		case *ast.MappingNode:
			for _, v := range n.Values {
				if !walk(v, path) {
					return false
				}
			}
		case *ast.MappingValueNode:
			p := n.Key.String()
			if path != "" {
				p = path + "." + p
			}
			if !fn(p, n) {
				return false
			}
			return walk(n.Value, p)
		case *ast.SequenceNode:
			for i, v := range n.Values {
				if !walk(v, path+"["+strconv.Itoa(i)+"]") {
					return false
				}
			}
		case *ast.TagNode:
			return walk(n.Value, path)
		case *ast.AnchorNode:
			return walk(n.Value, path)
		}
		return true
	}
	if f == nil {
		return
	}
	for _, d := range f.Docs {
		if !walk(d, "") {
			return
		}
	}
}

// goTypeWords is the Go wording of goccy's type errors, replaced by the
// key path.
var goTypeWords = regexp.MustCompile(`Go struct field \S+ of type `)

// quotedValue finds the value quoted in a decoder's error.
var quotedValue = regexp.MustCompile(`"([^"]+)"$`)

// yamlError renders a YAML error as "file:line:column: key: message".
func yamlError(name string, f *ast.File, err error) error {
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		// An error of a value's own decoder (time.ParseDuration) has no
		// position: find the value it quotes.
		if m := quotedValue.FindStringSubmatch(err.Error()); m != nil {
			var at string
			var line, col int
			walkKeys(f, func(path string, k *ast.MappingValueNode) bool {
				if t := k.Value.GetToken(); t != nil && t.Value == m[1] {
					at, line, col = path, t.Position.Line, t.Position.Column
					return false
				}
				return true
			})
			if at != "" {
				return fmt.Errorf("%w: %s:%d:%d: %s: %v", ErrConfig, name, line, col, at, err)
			}
		}
		return fmt.Errorf("%w: %s: %v", ErrConfig, name, err)
	}
	pos := ye.GetToken().Position
	msg := goTypeWords.ReplaceAllString(ye.GetMessage(), "")
	key := ""
	walkKeys(f, func(path string, k *ast.MappingValueNode) bool {
		for _, n := range []ast.Node{k.Key, k.Value} {
			if t := n.GetToken(); t != nil && t.Position.Line == pos.Line && t.Position.Column == pos.Column {
				key = path
				return false
			}
		}
		return true
	})
	if strings.Contains(msg, "already defined") {
		msg += " (a key may appear once in a mapping)"
	}
	var unk *yaml.UnknownFieldError
	if errors.As(err, &unk) {
		msg += " (docs/proxy.md lists every key)"
	}
	if key != "" {
		return fmt.Errorf("%w: %s:%d:%d: %s: %s", ErrConfig, name, pos.Line, pos.Column, key, msg)
	}
	return fmt.Errorf("%w: %s:%d:%d: %s", ErrConfig, name, pos.Line, pos.Column, msg)
}
