package httptoken

import "testing"

func TestValid(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"Bearer", true},
		{"Mcp-Param-Name", true},
		{"!#$%&'*+-.^_`|~09azAZ", true},
		{"", false},
		{"a b", false},
		{"a,b", false},
		{`a"b`, false},
		{"a=b", false},
		{"é", false},
		{"a\x00", false},
	} {
		if got := Valid(tt.s); got != tt.want {
			t.Errorf("Valid(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}
