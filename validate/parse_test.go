package validate

import (
	"errors"
	"github.com/mcpguard/mcpguard/internal/jwtclaims"
	"slices"
	"testing"
	"time"
)

// member is one top-level member as readObject reports it.
type member struct{ name, value string }

// objectMembers collects all top-level members of doc with readObject.
func objectMembers(doc string) ([]member, error) {
	var ms []member
	err := readObject(nil, []byte(doc), doc, []string{"sub"}, func(name []byte, value string) error {
		ms = append(ms, member{string(name), value})
		return nil
	})
	return ms, err
}

// TestObjectMembers: the glue over strictjson gives values as sub-strings
// and maps every class of the policy to Error "malformed".
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
		{"array", `[]`, nil, errNotObject},
		{"number", `1`, nil, errNotObject},
		{"invalid", `{"a":}`, nil, errMalformedJSON},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", nil, errInvalidUTF8},
		{"duplicate", `{"a":1,"a":2}`, nil, errDuplicateMember},
		{"nested duplicate", `{"x":{"a":1,"a":2}}`, nil, errDuplicateMember},
		{"fold duplicate", `{"a":1,"A":2}`, nil, errCaseVariant},
		{"lone case variant of a name read", `{"SUB":"x"}`, nil, errCaseVariant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := objectMembers(tt.doc)
			if !errors.Is(err, tt.wantErr) || (err != nil && !errors.Is(err, errMalformed)) {
				t.Fatalf("got err %v, want %v", err, tt.wantErr)
			}
			if err == nil && !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
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
		got, ok := jwtclaims.NumericDate(tt.in)
		if ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("jwtclaims.NumericDate(%s): got %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		got, ok = jwtclaims.NumericDate(tt.in)
		if ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("jwtclaims.NumericDate(%s): got %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
