package stdiobridge

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// placeholders are the user fields a Dir template may name, each as a
// whole path component.
var placeholders = []string{"{issuer}", "{subject}", "{tenant}", "{client}", "{user}"}

// dirTemplate is a parsed Config.Dir: an absolute base without
// placeholders and the components under it.
type dirTemplate struct {
	base  string
	parts []string // literal components or placeholders
}

func parseDir(tmpl string) (*dirTemplate, error) {
	if tmpl == "" {
		return nil, nil
	}
	if !filepath.IsAbs(tmpl) {
		return nil, fmt.Errorf("dir %q: want an absolute path", tmpl)
	}
	clean := filepath.Clean(tmpl)
	comps := strings.Split(strings.TrimPrefix(clean, string(filepath.Separator)), string(filepath.Separator))
	d := &dirTemplate{base: string(filepath.Separator)}
	inBase := true
	for _, c := range comps {
		if c == "" {
			continue
		}
		isPH := false
		for _, p := range placeholders {
			if c == p {
				isPH = true
			}
		}
		if !isPH && strings.ContainsAny(c, "{}") {
			return nil, fmt.Errorf("dir %q: a placeholder must be a whole path component, one of %s", tmpl, strings.Join(placeholders, " "))
		}
		if inBase && !isPH {
			d.base = filepath.Join(d.base, c)
			continue
		}
		inBase = false
		d.parts = append(d.parts, c)
	}
	return d, nil
}

// component is value as one safe path component: kept when it is 1 to
// 64 bytes of lower-case letters, digits and ._@+- not starting with a
// dot (so never "." or ".."; and two values that differ only in case
// never share a directory on a case-insensitive file system), otherwise
// "~" and the first 32 hex digits of its SHA-256 ("~" is not in the kept
// set, so a hashed name never equals a kept one). An empty value is "~".
func component(value string) string {
	if value == "" {
		return "~"
	}
	ok := len(value) <= 64 && value[0] != '.'
	for i := 0; ok && i < len(value); i++ {
		c := value[i]
		ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '@' || c == '+' || c == '-'
	}
	if ok {
		return value
	}
	h := sha256.Sum256([]byte(value))
	return "~" + hex.EncodeToString(h[:16])
}

// render returns the user's directory relative to the base.
func (d *dirTemplate) render(u User) string {
	parts := make([]string, len(d.parts))
	for i, p := range d.parts {
		switch p {
		case "{issuer}":
			p = component(u.Issuer)
		case "{subject}":
			p = component(u.Subject)
		case "{tenant}":
			p = component(u.Tenant)
		case "{client}":
			p = component(u.Client)
		case "{user}":
			h := sha256.Sum256([]byte(u.Key))
			p = "~" + hex.EncodeToString(h[:16])
		}
		parts[i] = p
	}
	return filepath.Join(parts...)
}

// ownersDir is the directory under the base that records which user
// each user directory belongs to. A rendered directory's first component
// is a placeholder's value, which never starts with a dot, so it is
// never a user's.
const ownersDir = ".mcpguard-owners"

// errDirOwned is a user's directory that another user's child used
// first: the template renders both users to one directory.
var errDirOwned = errors.New("the directory belongs to another user: the dir template does not tell these users apart (add {user}, or {issuer} and {client})")

// make creates the user's directory under the base, mode 0700, through
// an os.Root on the base, and returns its path. No component under the
// base may be a symbolic link (os.Root keeps a link inside the base,
// not inside the user's own directory), and the directory must not be
// another user's: the first user whose child uses it owns it (a record
// in ownersDir), so that a template that renders two users alike (a
// {subject} without {issuer} in front of two issuers; "~", the empty
// subject of every client acting for itself) serves the second none.
func (d *dirTemplate) make(u User) (string, error) {
	if err := os.MkdirAll(d.base, 0o700); err != nil {
		return "", err
	}
	rel := d.render(u)
	if rel == "" || rel == "." {
		return d.base, nil
	}
	root, err := os.OpenRoot(d.base)
	if err != nil {
		return "", err
	}
	defer root.Close()
	p := ""
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, c)
		if err := mkdirNoLink(root, p); err != nil {
			return "", err
		}
	}
	if err := root.Chmod(rel, 0o700); err != nil {
		return "", err
	}
	if err := claim(root, rel, u); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(d.base, rel), err)
	}
	return filepath.Join(d.base, rel), nil
}

// mkdirNoLink makes directory p under root unless it is one, and fails
// when p is a symbolic link or not a directory.
func mkdirNoLink(root *os.Root, p string) error {
	if err := root.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := root.Lstat(p)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("%s under the base is a symbolic link or not a directory", p)
	}
	return nil
}

// claim records u as the owner of directory rel, or checks that it is.
// The record appears whole or not at all (a link to a written file).
func claim(root *os.Root, rel string, u User) error {
	if err := mkdirNoLink(root, ownersDir); err != nil {
		return err
	}
	hr := sha256.Sum256([]byte(rel))
	name := filepath.Join(ownersDir, hex.EncodeToString(hr[:16]))
	hu := sha256.Sum256([]byte(u.Key))
	owner := hex.EncodeToString(hu[:])
	got, err := root.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		var rb [8]byte
		_, _ = rand.Read(rb[:])
		tmp := name + ".tmp" + hex.EncodeToString(rb[:])
		if err := root.WriteFile(tmp, []byte(owner), 0o600); err != nil {
			return err
		}
		err = root.Link(tmp, name)
		_ = root.Remove(tmp)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		got, err = root.ReadFile(name) // another start claimed it first
	}
	if err != nil {
		return err
	}
	if string(got) != owner {
		return errDirOwned
	}
	return nil
}

// dirToken in a value of Config.Env or an argument of Config.Command
// after the first is replaced by the user's working directory (the
// rendered Config.Dir, an absolute path), so that a server that keeps
// state in files can be told to keep it there.
const dirToken = "{dir}"

// checkDirToken refuses dirToken where it cannot be rendered: without
// a Dir, and in the program (looked up once, for every user).
func checkDirToken(cfg Config) error {
	if len(cfg.Command) > 0 && strings.Contains(cfg.Command[0], dirToken) {
		return fmt.Errorf("command: %s is not allowed in the program (the first element), only in its arguments", dirToken)
	}
	if cfg.Dir != "" {
		return nil
	}
	for _, a := range cfg.Command {
		if strings.Contains(a, dirToken) {
			return fmt.Errorf("command: an argument names %s, which needs dir (the user's working directory)", dirToken)
		}
	}
	for _, k := range slices.Sorted(mapKeys(cfg.Env)) {
		if strings.Contains(cfg.Env[k], dirToken) {
			return fmt.Errorf("env: %s names %s, which needs dir (the user's working directory)", k, dirToken)
		}
	}
	return nil
}

// withDir replaces every dirToken in s by dir, the user's rendered
// directory. Only the exact token is replaced: no other brace sequence
// has a meaning, and there is no escape (an argument cannot hold the
// literal text {dir}). dir is "" only without Config.Dir, when Check
// has refused every dirToken.
func withDir(s, dir string) string {
	if dir == "" {
		return s
	}
	return strings.ReplaceAll(s, dirToken, dir)
}
