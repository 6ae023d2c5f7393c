package middleware

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	rpcanswer "github.com/mcpguard/mcpguard/internal/answer"
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// filterEntriesTwoPass and appendEntryTwoPass are filterEntries as it was
// before it read the answer in one pass (the result, then the entries
// array again, then each entry again): the oracle of
// FuzzFilterEntriesOnePass.
func (t *answerWriter) filterEntriesTwoPass(result []byte) ([]byte, error) {
	k := t.entries
	as, ae, cs, ce := -1, -1, -1, -1
	err := t.m.json.MemberSpans(result, k.read, func(name []byte, s, e int) error {
		switch string(name) {
		case k.member:
			as, ae = s, e
		case memberCacheScope:
			cs, ce = s, e
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if as < 0 {
		return result, nil
	}
	arr := result[as:ae]
	if string(arr) == "null" {
		arr = []byte("[]")
	}
	elems, ok := strictjson.Elements(arr)
	if !ok {
		return nil, rpcanswer.ErrInvalid
	}
	read := entryRead[k.key]
	out := make([]byte, 0, len(result)+len(elems)*48+32)
	out = append(out, '{')
	if cs < 0 {
		out = append(out, `"`+memberCacheScope+`":"private",`...)
	}
	// The members before the entries, the entries, the members after,
	// with cacheScope replaced where it is.
	pos := 1
	emit := func(s, e int, fn func([]byte) ([]byte, error)) error {
		out = append(out, result[pos:s]...)
		var err error
		out, err = fn(out)
		pos = e
		return err
	}
	var hide []bool
	if t.m.pins != nil && k.method == methodToolsList {
		if hide, err = t.checkPins(elems); err != nil {
			return nil, err
		}
	}
	entries := func(out []byte) ([]byte, error) {
		out = append(out, '[')
		n := 0
		for i, elem := range elems {
			if hide != nil && hide[i] {
				continue // its definition is not its pin (pins.go)
			}
			start := len(out)
			if n > 0 {
				out = append(out, ',')
			}
			kept, o, err := t.appendEntryTwoPass(out, elem, read)
			if err != nil {
				return nil, err
			}
			if !kept {
				out = out[:start]
				continue
			}
			out = o
			n++
		}
		return append(out, ']'), nil
	}
	private := func(out []byte) ([]byte, error) { return append(out, `"private"`...), nil }
	if cs >= 0 && cs < as {
		err = emit(cs, ce, private)
	}
	if err == nil {
		err = emit(as, ae, entries)
	}
	if err == nil && cs > as {
		err = emit(cs, ce, private)
	}
	if err != nil {
		return nil, err
	}
	return append(out, result[pos:]...), nil
}

// appendEntry appends elem, one entry of t's list, to out as listEntry
// shows it, or reports false when it is left out.
func (t *answerWriter) appendEntryTwoPass(out, elem []byte, read []string) (bool, []byte, error) {
	if len(elem) == 0 || elem[0] != '{' {
		return false, out, nil
	}
	k := t.entries
	var name []byte
	ms, me, ss, se := -1, -1, -1, -1
	err := t.m.json.MemberSpans(elem, read, func(n []byte, s, e int) error {
		switch string(n) {
		case k.key:
			name = elem[s:e]
		case memberMeta:
			ms, me = s, e
		case memberSchemes:
			ss, se = s, e
		}
		return nil
	})
	if err != nil {
		return false, nil, err
	}
	str, ok := rpcanswer.String(name)
	if !ok {
		return false, out, nil
	}
	v := t.m.listEntry(t.p, k.method, str)
	if !v.listed {
		return false, out, nil
	}
	js := v.schemes
	if js == nil {
		return true, append(out, elem...), nil
	}
	tool := k.method == methodToolsList
	out = append(out, '{')
	if tool && ss < 0 {
		out = append(append(append(out, `"`+memberSchemes+`":`...), js...), ',')
	}
	if ms < 0 {
		out = append(append(append(out, `"`+memberMeta+`":{"`+memberSchemes+`":`...), js...), "},"...)
	}
	pos := 1
	if tool && ss >= 0 && ss < ms {
		out = append(append(out, elem[pos:ss]...), js...)
		pos = se
	}
	if ms >= 0 {
		out = append(out, elem[pos:ms]...)
		if out, err = t.appendMeta(out, elem[ms:me], js); err != nil {
			return false, nil, err
		}
		pos = me
	}
	if tool && ss >= 0 && ss > ms {
		out = append(append(out, elem[pos:ss]...), js...)
		pos = se
	}
	return true, append(out, elem[pos:]...), nil
}

// FuzzFilterEntriesOnePass: filterEntries, reading the result, its
// entries and each entry's members in one pass of the tokenizer, answers
// every list result exactly as the reading it replaced: the same bytes,
// or an error for the same inputs.
func FuzzFilterEntriesOnePass(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"a"},{"name":"admin"},{"name":"open","_meta":{"x":1}}]}`,
		`{"tools":[{"name":"a","securitySchemes":[],"_meta":null},{}, 3]}`,
		`{"tools":[ { "name" : "a" , "_meta" : { } } ] , "cacheScope" : "public" }`,
		`{"prompts":[{"name":"p","_meta":{"securitySchemes":1}}]}`,
		`{"cacheScope":"public","tools":[{"name":"\u0061dmin"}]}`,
		`{"tools":[]}`, `{"tools":null}`, `{"tools":{}}`, `{"tools":"x"}`, `{}`, `{"Tools":[]}`,
		`{"tools":[{"name":"a","Name":"b"}]}`, `{"tools":[{"name":"a","name":"b"}]}`,
		`{"tools":[{"name":"a","_meta":{"securitySchemes":[],"SecuritySchemes":1}}]}`,
		`{"tools":[{"securitySchemes":1,"name":"b","_meta":{"k":[1,{"a":2}]}},[{"name":"x"}]],"nextCursor":"c"}`,
		`{"tools":[{"name":"a"},}`, "{\"tools\":[{\"name\":\"\xff\"}]}",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	m := listAnswerMiddleware(f, ListAnnotate)
	p := newPrincipal(fakeClaims("mcp"))
	f.Fuzz(func(t *testing.T, result []byte, prompts bool) {
		k := listKindOf([]byte(methodToolsList))
		if prompts {
			k = listKindOf([]byte(methodPromptsList))
		}
		aw := &answerWriter{m: m, ctx: context.Background(), p: p, hdr: http.Header{}, entries: k, reqID: []byte("1")}
		want, werr := aw.filterEntriesTwoPass(bytes.Clone(result))
		got, gerr := aw.filterEntries(bytes.Clone(result))
		if (werr == nil) != (gerr == nil) || !bytes.Equal(want, got) {
			t.Fatalf("%q:\ntwo passes %q, %v\none pass   %q, %v", result, want, werr, got, gerr)
		}
	})
}
