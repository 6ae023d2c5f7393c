package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/mcpguard/mcpguard/internal/answer"
	"github.com/mcpguard/mcpguard/internal/strictjson"
	"github.com/mcpguard/mcpguard/middleware"
)

// listMembers maps each list method to the result member holding its
// entries and the entry member naming each.
var listMembers = map[string][2]string{
	"tools/list":               {"tools", "name"},
	"prompts/list":             {"prompts", "name"},
	"resources/list":           {"resources", "uri"},
	"resources/templates/list": {"resourceTemplates", "uriTemplate"},
}

// listRewriter rewrites a list answer, JSON or SSE, as the middleware
// decides each entry for the principal (Middleware.ListEntry, in the
// route's lists mode): entries no token could reach are removed, and
// under "hide" those the token may not call; every entry kept is
// annotated, unless the mode is off, with the scopes its call needs
// (SEP-1488): _meta.securitySchemes, and for a tool also its top-level
// securitySchemes; an upstream's own annotation is replaced.
type listRewriter struct {
	m      *middleware.Middleware
	p      *middleware.Principal
	method string
	id     []byte // the request's id: only its response is rewritten
	pool   strictjson.Pool
	// schemes caches the JSON of the annotations seen, by the middleware's
	// shared slice.
	schemes map[*middleware.SecurityScheme][]byte
}

// The members of an entry the annotation sets.
const (
	memberMeta    = "_meta"
	memberSchemes = "securitySchemes"
)

func (l *listRewriter) Rewrite(msg []byte) ([]byte, error) {
	var m answer.Message
	if err := answer.Parse(&l.pool, msg, &m); err != nil {
		return nil, err
	}
	if m.HasMethod || m.Result == nil || !bytes.Equal(m.ID, l.id) {
		return msg, nil // a notification, request or error: untouched
	}
	names := listMembers[l.method]
	arr, start, end, ok, err := answer.Member(&l.pool, m.Result, []string{names[0], "nextCursor", "_meta"}, names[0])
	if err != nil || !ok {
		return msg, err
	}
	elems, ok := strictjson.Elements(arr)
	if !ok {
		return nil, answer.ErrInvalid
	}
	out := make([]byte, 0, len(arr)+len(elems)*64)
	out = append(out, '[')
	changed, n := false, 0
	read := []string{names[1], memberSchemes, memberMeta}
	for _, elem := range elems {
		v, _, _, ok, err := answer.Member(&l.pool, elem, read, names[1])
		if err != nil {
			return nil, err
		}
		name, isString := answer.String(v)
		if !ok || !isString {
			changed = true // an entry without a name cannot be decided
			continue
		}
		d := l.m.ListEntry(l.p, l.method, name)
		if !d.Listed {
			changed = true
			continue
		}
		if d.SecuritySchemes != nil {
			e, err := l.annotate(elem, read, d.SecuritySchemes)
			if err != nil {
				return nil, err
			}
			elem, changed = e, true
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, elem...)
		n++
	}
	if !changed {
		return msg, nil
	}
	out = append(out, ']')
	res := answer.Splice(m.Result, start, end, out)
	return answer.Splice(msg, m.ResultStart, m.ResultEnd, res), nil
}

// annotate sets the SEP-1488 annotation of one entry: _meta.securitySchemes
// and, for a tool, securitySchemes.
func (l *listRewriter) annotate(elem []byte, read []string, schemes []middleware.SecurityScheme) ([]byte, error) {
	js, ok := l.schemes[&schemes[0]]
	if !ok {
		b, err := json.Marshal(schemes)
		if err != nil {
			return nil, err
		}
		if l.schemes == nil {
			l.schemes = map[*middleware.SecurityScheme][]byte{}
		}
		l.schemes[&schemes[0]], js = b, b
	}
	meta, ms, me, ok, err := answer.Member(&l.pool, elem, read, memberMeta)
	if err != nil {
		return nil, err
	}
	if ok && len(meta) > 0 && meta[0] == '{' {
		meta, err = l.setMember(meta, []string{memberSchemes}, memberSchemes, js)
		if err != nil {
			return nil, err
		}
		elem = answer.Splice(elem, ms, me, meta)
	} else {
		m := make([]byte, 0, len(js)+len(memberSchemes)+4)
		m = append(append(append(m, `{"`+memberSchemes+`":`...), js...), '}')
		if ok { // _meta is not an object (null): replaced
			elem = answer.Splice(elem, ms, me, m)
		} else if elem, err = l.setMember(elem, read, memberMeta, m); err != nil {
			return nil, err
		}
	}
	if l.method == "tools/list" {
		return l.setMember(elem, read, memberSchemes, js)
	}
	return elem, nil
}

// setMember returns the JSON object obj with member name set to the JSON
// value v: its value replaced, or the member added first.
func (l *listRewriter) setMember(obj []byte, read []string, name string, v []byte) ([]byte, error) {
	_, s, e, ok, err := answer.Member(&l.pool, obj, read, name)
	if err != nil {
		return nil, err
	}
	if ok {
		return answer.Splice(obj, s, e, v), nil
	}
	i := bytes.IndexByte(obj, '{') + 1 // obj is an object: Member read it
	m := make([]byte, 0, len(name)+len(v)+4)
	m = append(append(append(m, '"'), name...), `":`...)
	m = append(m, v...)
	if len(bytes.TrimSpace(obj[i:])) > 1 { // not "{}"
		m = append(m, ',')
	}
	return answer.Splice(obj, i, i, m), nil
}

// listWriter wraps w when the request is a list the route rewrites.
func (x *route) listWriter(w http.ResponseWriter, st *reqState, p *middleware.Principal) (*answer.Writer, bool) {
	if x.cfg.Lists == "off" || st.decision.Method == "" {
		return nil, false
	}
	if _, ok := listMembers[st.decision.Method]; !ok || st.body == nil {
		return nil, false
	}
	var id []byte
	_ = strictjson.Members(st.body, []string{"id"}, func(name, v []byte) error {
		if string(name) == "id" {
			id = bytes.Clone(v)
		}
		return nil
	})
	aw := &answer.Writer{}
	aw.Reset(w, &listRewriter{m: x.guard.Middleware(), p: p, method: st.decision.Method, id: id}, answer.Options{})
	return aw, true
}
