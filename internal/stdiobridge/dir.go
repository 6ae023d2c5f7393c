package stdiobridge

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
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

// make creates the user's directory under the base, mode 0700, through
// an os.Root on the base (no symbolic link leads out of it), and
// returns its path.
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
	if err := root.MkdirAll(rel, 0o700); err != nil {
		return "", err
	}
	if err := root.Chmod(rel, 0o700); err != nil {
		return "", err
	}
	return filepath.Join(d.base, rel), nil
}
