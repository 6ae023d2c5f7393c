package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"testing"
	"time"
)

// objectMembers collects all top-level members of doc.
func objectMembers(doc string) ([]member, error) {
	var ms []member
	it := iterMembers(doc)
	for m, ok := it.next(); ok; m, ok = it.next() {
		ms = append(ms, m)
	}
	return ms, it.err
}

func TestObjectMembers(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    []member
		wantErr error
	}{
		{"empty object", `{}`, nil, nil},
		{"spaces", " { \"a\" : 1 , \"b\":\"x\" } ", []member{{"a", "1"}, {"b", `"x"`}}, nil},
		{"nested", `{"a":{"b":[1,{"c":"}"}]},"d":[]}`, []member{{"a", `{"b":[1,{"c":"}"}]}`}, {"d", "[]"}}, nil},
		{"escaped quote in string", `{"a":"x\"}y","b":true}`, []member{{"a", `"x\"}y"`}, {"b", "true"}}, nil},
		{"escaped name", `{"\u0061":null}`, []member{{"a", "null"}}, nil},
		{"array", `[]`, nil, ErrMalformed},
		{"number", `1`, nil, ErrMalformed},
		{"duplicate", `{"a":1,"a":2}`, nil, ErrMalformed},
		{"fold duplicate", `{"a":1,"A":2}`, nil, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !validJSON([]byte(tt.doc)) {
				t.Fatalf("fixture %q is not valid JSON", tt.doc)
			}
			got, err := objectMembers(tt.doc)
			if err == nil {
				err = uniqueNames(tt.doc, maphash.MakeSeed())
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got err %v, want %v", err, tt.wantErr)
			}
			if err == nil && !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestJSONStrings(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		ok   bool
	}{
		{`[]`, []string{}, true},
		{`[ "a" , "b\u0020c" ]`, []string{"a", "b c"}, true},
		{`["a",1]`, nil, false},
		{`["a",["b"]]`, nil, false},
		{`"a"`, nil, false},
	}
	for _, tt := range tests {
		got, ok := jsonStrings(tt.in)
		if ok != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("jsonStrings(%s): got %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNumericDate(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"0", time.Unix(0, 0).UTC(), true},
		{"1767330245", time.Unix(1767330245, 0).UTC(), true},
		{"1767330245.999999999", time.Unix(1767330246, 0).UTC(), true},
		{"1.5", time.Unix(1, 5e8).UTC(), true},
		{"253402300799", time.Unix(253402300799, 0).UTC(), true},
		{"253402300799.5", time.Time{}, false},
		{"253402300800", time.Time{}, false},
		{"-1", time.Time{}, false},
		{"-0.5", time.Time{}, false},
		{"1e309", time.Time{}, false},
		{"9223372036854775808", time.Time{}, false},
		{`"1"`, time.Time{}, false},
		{"true", time.Time{}, false},
		{"null", time.Time{}, false},
		{"", time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := numericDate(tt.in)
		if ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("numericDate(%s): got %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		got, ok = ParseNumericDate(tt.in)
		if ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("ParseNumericDate(%s): got %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestUniqueNamesFolding checks that the hashed path (many members) and
// the pairwise path agree with strings.EqualFold on tricky folds.
func TestUniqueNamesFolding(t *testing.T) {
	names := []string{"sub", "SUB", "ſub", "Sub", "kid", "\u212aid", "KID", "é", "É", "ß", "ẞ", "ss", "σ", "ς", "Σ", "iss", "İss", "ıss"}
	obj := func(names ...string) string {
		var b strings.Builder
		b.WriteByte('{')
		for i, n := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n)
			b.Write(k)
			b.WriteString(":0")
		}
		return b.String() + "}"
	}
	var filler []string
	for i := range maxMembersPairwise {
		filler = append(filler, fmt.Sprintf("filler-%d", i))
	}
	for _, a := range names {
		for _, b := range names {
			want := strings.EqualFold(a, b)
			for _, doc := range []string{obj(a, b), obj(append(append(slices.Clone(filler), a, b), "last")...)} {
				if got := uniqueNames(doc, maphash.MakeSeed()) != nil; got != want {
					t.Errorf("%s: duplicate %v, EqualFold(%q, %q) says %v", doc, got, a, b, want)
				}
			}
		}
	}
}

func fill(n int, b byte) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}
