package deptest

import (
	"slices"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, pkg string
		want         bool
	}{
		{"a.com/x", "a.com/x", true},
		{"a.com/x", "a.com/x/y", false},
		{"a.com/x", "a.com/xy", false},
		{"a.com/x/...", "a.com/x", true},
		{"a.com/x/...", "a.com/x/y/z", true},
		{"a.com/x/...", "a.com/xy", false},
		{"a.com/x/...", "a.com", false},
		{"testing", "testing", true},
		{"testing", "testing/iotest", false},
	}
	for _, tt := range tests {
		if got := match(tt.pattern, tt.pkg); got != tt.want {
			t.Errorf("match(%q, %q): got %v, want %v", tt.pattern, tt.pkg, got, tt.want)
		}
	}
}

// TestViolations checks which dependencies each kind of rule reports, and
// why.
func TestViolations(t *testing.T) {
	const self = "m.com/p"
	std := map[string]bool{"net/http": true, "testing": true, self: false, "m.com/q": false, "m.com/q/sub": false, "x.org/lib": false}
	deps := []string{self, "net/http", "testing", "m.com/q", "m.com/q/sub", "x.org/lib", "unlisted"}
	notAllowed := func(deps ...string) []violation {
		var vs []violation
		for _, d := range deps {
			vs = append(vs, violation{dep: d})
		}
		return vs
	}
	tests := []struct {
		name string
		c    DepChecker
		want []violation
	}{
		{name: "zero value: standard library only", c: DepChecker{}, want: notAllowed("m.com/q", "m.com/q/sub", "x.org/lib")},
		{name: "exact entry", c: DepChecker{Allowed: []string{"m.com/q"}}, want: notAllowed("m.com/q/sub", "x.org/lib")},
		{name: "subtree entry", c: DepChecker{Allowed: []string{"m.com/q/..."}}, want: notAllowed("x.org/lib")},
		{name: "everything allowed", c: DepChecker{Allowed: []string{"m.com/q/...", "x.org/lib"}}, want: nil},
		{
			name: "bad standard library package",
			c:    DepChecker{Allowed: []string{"m.com/q/...", "x.org/lib"}, BadDeps: map[string]string{"net/http": "no HTTP"}},
			want: []violation{{"net/http", "no HTTP"}},
		},
		{
			name: "bad beats allowed",
			c:    DepChecker{Allowed: []string{"m.com/q/...", "x.org/lib"}, BadDeps: map[string]string{"m.com/q/...": "q is above p"}},
			want: []violation{{"m.com/q", "q is above p"}, {"m.com/q/sub", "q is above p"}},
		},
		{
			name: "bad and not allowed",
			c:    DepChecker{BadDeps: map[string]string{"m.com/q/sub": "sub is above p"}},
			want: []violation{{"m.com/q", ""}, {"m.com/q/sub", "sub is above p"}, {"x.org/lib", ""}},
		},
		{
			name: "first matching pattern gives the reason",
			c:    DepChecker{AllowUnlisted: true, BadDeps: map[string]string{"m.com/q/...": "a", "m.com/q/sub": "b"}},
			want: []violation{{"m.com/q", "a"}, {"m.com/q/sub", "a"}},
		},
		{
			name: "allow unlisted",
			c:    DepChecker{AllowUnlisted: true, BadDeps: map[string]string{"testing": "no tests", "x.org/lib": "too big"}},
			want: []violation{{"testing", "no tests"}, {"x.org/lib", "too big"}},
		},
		{name: "allow unlisted without bad deps", c: DepChecker{AllowUnlisted: true}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.violations(self, deps, std); !slices.Equal(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
