package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMembers(t *testing.T) {
	many := func(n int, extra string) string {
		var sb strings.Builder
		sb.WriteString("{")
		for i := range n {
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString(`"m` + strings.Repeat("x", i) + `":0`)
		}
		return sb.String() + extra + "}"
	}
	tests := []struct {
		name    string
		doc     string
		read    []string
		want    string // name=value;… of the members read
		wantErr error
	}{
		{name: "lone case variant of a name read", doc: `{"SUB":1}`, read: []string{"iss", "sub"}, wantErr: ErrCaseVariant},
		{name: "lone long s variant of a name read", doc: `{"ſub":1}`, read: []string{"sub"}, wantErr: ErrCaseVariant},
		{name: "lone kelvin variant of a name read", doc: `{"\u212aid":1}`, read: []string{"kid"}, wantErr: ErrCaseVariant},
		{name: "lone case variant of a name not read", doc: `{"SUB":1}`, read: []string{"iss"}, want: `SUB=1;`},
		{name: "exact name read", doc: `{"sub":1}`, read: []string{"sub"}, want: `sub=1;`},
		{name: "empty object", doc: `{}`, want: ""},
		{name: "members", doc: ` {"a" : 1, "b":[1,{"c":2}] ,"d":"x"} `, want: `a=1;b=[1,{"c":2}];d="x";`},
		{name: "escaped name", doc: `{"\u0061":true}`, want: `a=true;`},
		{name: "empty", doc: ``, wantErr: ErrSyntax},
		{name: "whitespace only", doc: " \n", wantErr: ErrSyntax},
		{name: "unterminated", doc: `{"a":1`, wantErr: ErrSyntax},
		{name: "trailing data", doc: `{"a":1}{}`, wantErr: ErrSyntax},
		{name: "trailing comma", doc: `{"a":1,}`, wantErr: ErrSyntax},
		{name: "single quotes", doc: `{'a':1}`, wantErr: ErrSyntax},
		{name: "number name", doc: `{1:1}`, wantErr: ErrSyntax},
		{name: "NaN", doc: `{"a":NaN}`, wantErr: ErrSyntax},
		{name: "leading zero", doc: `{"a":01}`, wantErr: ErrSyntax},
		{name: "control char", doc: "{\"a\":\"\x01\"}", wantErr: ErrSyntax},
		{name: "array", doc: `[{"a":1}]`, wantErr: ErrNotObject},
		{name: "string", doc: `"a"`, wantErr: ErrNotObject},
		{name: "null", doc: `null`, wantErr: ErrNotObject},
		{name: "duplicate", doc: `{"a":1,"a":2}`, wantErr: ErrDuplicateName},
		{name: "escaped duplicate", doc: `{"a":1,"\u0061":2}`, wantErr: ErrDuplicateName},
		{name: "nested duplicate", doc: `{"a":{"b":1,"b":2}}`, wantErr: ErrDuplicateName},
		{name: "deep duplicate", doc: `{"a":[[{"b":1,"b":2}]]}`, wantErr: ErrDuplicateName},
		{name: "case variant", doc: `{"a":1,"A":2}`, wantErr: ErrCaseVariant},
		{name: "kelvin sign", doc: `{"k":1,"\u212a":2}`, wantErr: ErrCaseVariant},
		{name: "long s", doc: `{"s":1,"ſ":2}`, wantErr: ErrCaseVariant},
		{name: "nested case variant allowed", doc: `{"a":{"b":1,"B":2}}`, want: `a={"b":1,"B":2};`},
		{name: "case variant among many", doc: many(40, `,"MXXX":1`), wantErr: ErrCaseVariant},
		{name: "duplicate among many", doc: many(40, `,"mxxx":1`), wantErr: ErrDuplicateName},
		{name: "case variant then syntax error", doc: `{"a":1,"A":2,}`, wantErr: ErrSyntax},
		{name: "invalid UTF-8 value", doc: "{\"a\":\"\xff\"}", wantErr: ErrInvalidUTF8},
		{name: "invalid UTF-8 name", doc: "{\"\xff\":1}", wantErr: ErrInvalidUTF8},
		{name: "invalid UTF-8 nested", doc: "{\"a\":[\"\xc3\"]}", wantErr: ErrInvalidUTF8},
		{name: "lone surrogate", doc: `{"a":"\ud800"}`, wantErr: ErrInvalidUTF8},
		{name: "surrogate pair", doc: `{"a":"\ud83d\ude00"}`, want: `a="\ud83d\ude00";`},
		{name: "too deep", doc: `{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, wantErr: ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got strings.Builder
			err := Members([]byte(tt.doc), tt.read, func(name, value []byte) error {
				got.WriteString(string(name) + "=" + string(value) + ";")
				return nil
			})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("Members = %q, %v; want %q", got.String(), err, tt.want)
			}
		})
	}
}

func TestMembersStopsOnCallbackError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Members([]byte(`{"a":1,"b":2}`), nil, func(_, _ []byte) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("err = %v after %d calls", err, n)
	}
}

func TestValues(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want string
		ok   bool
	}{{`"a"`, "a", true}, {`"a\"b"`, `a"b`, true}, {`"\u00e9"`, "é", true}, {`1`, "", false}, {`"`, "", false}, {`null`, "", false}} {
		if got, ok := String(tt.v); got != tt.want || ok != tt.ok {
			t.Errorf("String(%s) = %q, %t", tt.v, got, ok)
		}
	}
	if got, ok := Strings(`["a","\u0062"]`); !ok || strings.Join(got, ",") != "a,b" {
		t.Errorf("Strings = %q, %t", got, ok)
	}
	if got, ok := Strings(`[]`); !ok || got == nil || len(got) != 0 {
		t.Errorf("Strings([]) = %#v, %t", got, ok)
	}
	for _, v := range []string{`["a",1]`, `"a"`, `[null]`, ``} {
		if _, ok := Strings(v); ok {
			t.Errorf("Strings(%s) accepted", v)
		}
	}
}

func TestUnmarshalIsCaseSensitive(t *testing.T) {
	var v struct {
		Name string `json:"name"`
	}
	if err := Unmarshal([]byte(`{"NAME":"x"}`), &v); err != nil || v.Name != "" {
		t.Fatalf("Unmarshal = %+v, %v", v, err)
	}
	if err := Unmarshal([]byte(`{"name":"x","name":"y"}`), &v); err == nil {
		t.Fatal("Unmarshal accepted a duplicate")
	}
}

// FuzzMembers: Members never panics; what it accepts is one valid UTF-8
// JSON object for encoding/json too, whose top-level names are unique
// under case folding, and whose member values, read back, are exactly
// what encoding/json reads (last-wins and case folding cannot matter).
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[true,null,{"c":"d"}]}`, `{"a":1,"A":2}`, `{"a":1,"a":2}`,
		"{\"a\":\"\xff\"}", `{"a":"\ud800"}`, `[1]`, `{"k":1,"\u212a":2}`, `{"a":{"b":1,"b":2}}`, ` {"x" : "y" } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got := map[string]json.RawMessage{}
		var names []string
		err := Members(doc, []string{"method", "sub"}, func(name, value []byte) error {
			names = append(names, string(name))
			got[string(name)] = append(json.RawMessage(nil), value...)
			return nil
		})
		if err != nil {
			for _, s := range []error{ErrSyntax, ErrInvalidUTF8, ErrDuplicateName, ErrCaseVariant, ErrNotObject} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("undocumented error %v", err)
		}
		if !json.Valid(doc) || !utf8.Valid(doc) {
			t.Fatalf("accepted %q, which encoding/json or utf8 refuses", doc)
		}
		if Valid(doc) != nil {
			t.Fatalf("Members accepted %q, Valid refuses", doc)
		}
		for _, n := range names {
			for _, r := range []string{"method", "sub"} {
				if n != r && strings.EqualFold(n, r) {
					t.Fatalf("accepted %q, a case variant of %q, which is read", n, r)
				}
			}
		}
		for i := range names {
			for j := range i {
				if strings.EqualFold(names[i], names[j]) {
					t.Fatalf("accepted names %q and %q", names[i], names[j])
				}
			}
		}
		var std map[string]json.RawMessage
		if err := json.Unmarshal(doc, &std); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		if len(std) != len(got) {
			t.Fatalf("encoding/json has %d members, Members %d", len(std), len(got))
		}
		for k, v := range std {
			if string(got[k]) != string(v) {
				t.Fatalf("member %q: encoding/json %s, Members %s", k, v, got[k])
			}
		}
	})
}

// TestCaseVariantsFolding: the pairwise path (few members) and the hashed
// path (many) both agree with strings.EqualFold on tricky folds.
func TestCaseVariantsFolding(t *testing.T) {
	names := []string{"sub", "SUB", "ſub", "Sub", "kid", "\u212aid", "KID", "é", "É", "ß", "ẞ", "ss", "σ", "ς", "Σ", "iss", "İss", "ıss"}
	obj := func(names ...string) []byte {
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
		return []byte(b.String() + "}")
	}
	var filler []string
	for i := range maxPairwise {
		filler = append(filler, "filler-"+strings.Repeat("x", i))
	}
	for _, a := range names {
		for _, b := range names {
			want := strings.EqualFold(a, b)
			for _, doc := range [][]byte{obj(a, b), obj(append(append(append([]string(nil), filler...), a, b), "last")...)} {
				err := Members(doc, nil, func(_, _ []byte) error { return nil })
				if got := err != nil; got != want {
					t.Errorf("%s: refused %v (%v), EqualFold(%q, %q) says %v", doc, got, err, a, b, want)
				}
			}
		}
	}
}

func TestElementsAndCompact(t *testing.T) {
	els, ok := Elements([]byte(` [1, "a" ,{"b":[2]}] `[1:]))
	if !ok || len(els) != 3 || string(els[0]) != "1" || string(els[1]) != `"a"` || string(els[2]) != `{"b":[2]}` {
		t.Fatalf("Elements = %q, %t", els, ok)
	}
	if _, ok := Elements([]byte(`{}`)); ok {
		t.Fatal("Elements accepted an object")
	}
	got, err := Compact([]byte(" { \"a\" : [ 1 , \"<\\u0062>\" ] } "))
	if err != nil || string(got) != `{"a":[1,"<\u0062>"]}` {
		t.Fatalf("Compact = %s, %v", got, err)
	}
	if _, err := Compact([]byte(`{"a":1,"a":2}`)); !errors.Is(err, ErrDuplicateName) {
		t.Fatalf("Compact of a duplicate: %v", err)
	}
}

// TestPoolConcurrent: a Pool is safe for concurrent use and reads as the
// package-level functions do (run with -race).
func TestPoolConcurrent(t *testing.T) {
	var p Pool
	docs := []string{`{"a":1,"b":"x"}`, `{"a":1,"a":2}`, `{"A":1}`, `[1]`, `{"b":{"c":[1,2,3]}}`}
	done := make(chan bool)
	for g := range 4 {
		go func() {
			defer func() { done <- true }()
			for i := range 200 {
				doc := []byte(docs[(g+i)%len(docs)])
				var a, b string
				errA := p.Members(doc, []string{"a"}, func(n, v []byte) error { a += string(n) + string(v); return nil })
				errB := Members(doc, []string{"a"}, func(n, v []byte) error { b += string(n) + string(v); return nil })
				if a != b || !errors.Is(errA, errB) && errA != errB {
					t.Errorf("%s: pool %q %v, plain %q %v", doc, a, errA, b, errB)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
