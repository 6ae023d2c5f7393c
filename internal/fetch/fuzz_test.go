package fetch

import (
	"strings"
	"testing"
)

// FuzzCheckURL checks the property every caller relies on: an accepted URL
// is absolute https, or http to a loopback host when allowed, and has no
// userinfo or fragment.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://a.example/x", "http://127.0.0.1:1/", "http://localhost/", "https://u@a/", "https://a/#", "http://[::1]/", "https://:1/", "HTTP://LOCALHOST/"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, loopback bool) {
		u, err := CheckURL(raw, loopback)
		if err != nil {
			return
		}
		switch {
		case u.Hostname() == "" || u.User != nil || u.Fragment != "" || strings.Contains(raw, "#"):
			t.Fatalf("CheckURL accepted %q", raw)
		case u.Scheme == "https":
		case u.Scheme == "http" && loopback && IsLoopbackHost(u.Hostname()):
		default:
			t.Fatalf("CheckURL accepted scheme %q in %q (loopback %v)", u.Scheme, raw, loopback)
		}
	})
}
