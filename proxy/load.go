package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxConfigBytes bounds a configuration file.
const maxConfigBytes = 1 << 20

// maxSecretBytes bounds a secret file.
const maxSecretBytes = 64 << 10

// load reads the YAML configuration file at path ([Parse]), bounded;
// the tests use it (the command reads its -config file itself).
func load(path string, getenv func(string) string) (Config, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if fi.Size() > maxConfigBytes {
		return Config{}, fmt.Errorf("%w: %s: larger than %d bytes", ErrConfig, path, maxConfigBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return Parse(path, b, getenv)
}

// Parse decodes a YAML configuration (the schema is [Config]; name is the
// file name for errors). It refuses, naming file, line, column and key
// path of each: a key the schema does not have, a value of the wrong
// type, a key given twice in one mapping, and an inline secret (a key
// such as client_secret or password: secrets come only from the
// environment, *_env, or from files, *_file, which Parse reads). The
// semantic checks are [New]'s. Errors wrap [ErrConfig].
func Parse(name string, data []byte, getenv func(string) string) (Config, error) {
	var c Config
	if len(data) > maxConfigBytes {
		return c, fmt.Errorf("%w: %s: larger than %d bytes", ErrConfig, name, maxConfigBytes)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return c, fmt.Errorf("%w: %s: %s", ErrConfig, name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if err := inlineSecrets(name, &root); err != nil {
		return c, err
	}
	data, err := stdioUpstreams(name, &root, data)
	if err != nil {
		return c, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, yamlError(name, &root, err)
	}
	pw, err := secret("redis.password", c.Redis.PasswordEnv, c.Redis.PasswordFile, getenv)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %s: %w", ErrConfig, name, err)
	}
	c.Redis.Password = pw
	for i := range c.Routes {
		ex := &c.Routes[i].Identity.Exchange
		at := fmt.Sprintf("routes[%d].identity.exchange", i)
		s, err := secret(at+".client_secret", ex.ClientSecretEnv, ex.ClientSecretFile, getenv)
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: %w", ErrConfig, name, err)
		}
		ex.ClientSecret = s
		dp := &c.Routes[i].DPoPProof
		ns, err := secret(fmt.Sprintf("routes[%d].dpop_proof.nonce_secret", i), dp.NonceSecretEnv, dp.NonceSecretFile, getenv)
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: %w", ErrConfig, name, err)
		}
		if ns != "" {
			dp.NonceSecret = []byte(ns)
		}
	}
	for iss, is := range c.Issuers {
		in := &is.Introspection
		s, err := secret(fmt.Sprintf("issuers[%s].introspection.client_secret", iss), in.ClientSecretEnv, in.ClientSecretFile, getenv)
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: %w", ErrConfig, name, err)
		}
		in.ClientSecret = s
		c.Issuers[iss] = is
	}
	return c, nil
}

// secret reads a secret from the environment variable env or the file
// file; at most one may be set, none gives "".
func secret(field, env, file string, getenv func(string) string) (string, error) {
	switch {
	case env != "" && file != "":
		return "", fmt.Errorf("set %s_env or %s_file, not both", field, field)
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

// schemaKey matches the keys of the schema (not the issuer URLs that
// key the issuers mapping).
var schemaKey = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// inlineSecrets refuses a mapping key that holds a secret inline.
func inlineSecrets(name string, root *yaml.Node) error {
	var err error
	walkKeys(root, func(path string, k, _ *yaml.Node) bool {
		if schemaKey.MatchString(k.Value) && secretKey.MatchString(k.Value) {
			err = fmt.Errorf("%w: %s:%d:%d: %s: secrets are never inline; use %s_env (an environment variable's name) or %s_file (a file's path)",
				ErrConfig, name, k.Line, k.Column, path, k.Value, k.Value)
			return false
		}
		return true
	})
	return err
}

// walkKeys calls fn for every mapping entry under root with its key path
// ("routes[0].upstream"), key and value nodes, until fn returns false.
func walkKeys(root *yaml.Node, fn func(path string, k, v *yaml.Node) bool) {
	var walk func(n *yaml.Node, path string) bool
	walk = func(n *yaml.Node, path string) bool {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if !walk(c, path) {
					return false
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + p
				}
				if !fn(p, k, v) || !walk(v, p) {
					return false
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if !walk(c, path+"["+strconv.Itoa(i)+"]") {
					return false
				}
			}
		}
		return true
	}
	walk(root, "")
}

// routeKey matches the key path of a route's upstream or stdio.
var routeKey = regexp.MustCompile(`^routes\[(\d+)\]\.(upstream|stdio)$`)

// stdioUpstreams lets a route's upstream be a mapping, the stdio form:
// upstream: {command: [...], env: {...}, dir: ...} is stdio: {...}. The
// key is renamed in a copy of data, padded with blanks (a plain key may
// be followed by blanks before its colon), so that the lines and columns
// of later errors stay those of the file; errors name the key as
// written, from root. A quoted key, or a route with both, is refused.
func stdioUpstreams(name string, root *yaml.Node, data []byte) ([]byte, error) {
	type key struct {
		route string
		k     *yaml.Node
	}
	var rename []key
	stdio := map[string]bool{}
	walkKeys(root, func(path string, k, v *yaml.Node) bool {
		m := routeKey.FindStringSubmatch(path)
		switch {
		case m == nil:
		case m[2] == "stdio":
			stdio[m[1]] = true
		case v.Kind == yaml.MappingNode:
			rename = append(rename, key{m[1], k})
		}
		return true
	})
	if len(rename) == 0 {
		return data, nil
	}
	out := bytes.Clone(data)
	for _, r := range rename {
		k := r.k
		if stdio[r.route] {
			return nil, fmt.Errorf("%w: %s:%d:%d: routes[%s]: upstream is a mapping (the stdio form) and stdio is set too; give one", ErrConfig, name, k.Line, k.Column, r.route)
		}
		off, ok := offset(out, k.Line, k.Column)
		if !ok || k.Style != 0 || !bytes.HasPrefix(out[off:], []byte("upstream")) {
			return nil, fmt.Errorf("%w: %s:%d:%d: upstream as a mapping must be a plain key; or write stdio: {command: [...]}", ErrConfig, name, k.Line, k.Column)
		}
		copy(out[off:], "stdio   ")
	}
	return out, nil
}

// offset is the byte offset in data of the 1-based line and column of a
// yaml.v3 mark, ok when the line holds only ASCII up to it (columns count
// characters).
func offset(data []byte, line, col int) (int, bool) {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return 0, false
		}
		off += i + 1
	}
	end := off + col - 1
	if col < 1 || end > len(data) {
		return 0, false
	}
	for _, b := range data[off:end] {
		if b >= 0x80 || b == '\n' {
			return 0, false
		}
	}
	return end, true
}

// The messages of yaml.v3's decoding errors, reworded with the key.
var (
	lineMsg      = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownField = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	duplicateKey = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
	wrongType    = regexp.MustCompile("^cannot unmarshal !!(\\w+) `(.*)` into (\\S+)$")
)

// yamlError renders each of yaml.v3's decoding errors as
// "file:line:column: key: message", one per line.
func yamlError(name string, root *yaml.Node, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("%w: %s: %s", ErrConfig, name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var out []string
	for _, e := range te.Errors {
		m := lineMsg.FindStringSubmatch(e)
		if m == nil {
			out = append(out, name+": "+e)
			continue
		}
		line, _ := strconv.Atoi(m[1])
		msg := m[2]
		// The key the error is about, on that line.
		var want func(k, v *yaml.Node) bool
		switch {
		case unknownField.MatchString(msg):
			f := unknownField.FindStringSubmatch(msg)[1]
			msg = fmt.Sprintf("unknown key %q (docs/proxy.md lists every key)", f)
			want = func(k, _ *yaml.Node) bool { return k.Line == line && k.Value == f }
		case duplicateKey.MatchString(msg):
			d := duplicateKey.FindStringSubmatch(msg)
			msg = fmt.Sprintf("key %q given twice (first at line %s); a key may appear once in a mapping", d[1], d[2])
			want = func(k, _ *yaml.Node) bool { return k.Line == line && k.Value == d[1] }
		case wrongType.MatchString(msg):
			w := wrongType.FindStringSubmatch(msg)
			msg = fmt.Sprintf("want %s, got %s %q", w[3], yamlKind(w[1]), w[2])
			want = func(_, v *yaml.Node) bool { return v.Line == line }
		default:
			want = func(k, _ *yaml.Node) bool { return k.Line == line }
		}
		loc := fmt.Sprintf("%s:%d", name, line)
		walkKeys(root, func(path string, k, v *yaml.Node) bool {
			if want(k, v) {
				n := k
				if v.Line == line && k.Line != line {
					n = v
				}
				if wrongType.MatchString(m[2]) {
					n = v
				}
				loc = fmt.Sprintf("%s:%d:%d: %s", name, line, n.Column, path)
			}
			return true // the deepest match wins
		})
		out = append(out, loc+": "+msg)
	}
	return fmt.Errorf("%w: %s", ErrConfig, strings.Join(out, "\n"))
}

// yamlKind names a YAML tag for a person.
func yamlKind(tag string) string {
	switch tag {
	case "str":
		return "the string"
	case "int", "float":
		return "the number"
	case "bool":
		return "the boolean"
	case "map":
		return "a mapping"
	case "seq":
		return "a list"
	}
	return tag
}
