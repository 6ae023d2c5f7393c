package proxy

import (
	"bytes"
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

// listRewriter removes from a list answer, JSON or SSE, the entries the
// middleware does not list for the principal (Middleware.ListEntry, in
// the route's lists mode): entries no token could reach, and under
// "hide" those the token may not call. Entries are not annotated
// (securitySchemes) by the proxy.
type listRewriter struct {
	m      *middleware.Middleware
	p      *middleware.Principal
	method string
	id     []byte // the request's id: only its response is rewritten
	pool   strictjson.Pool
}

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
	out, removed, err := answer.FilterArray(arr, func(elem []byte) (bool, error) {
		v, _, _, ok, err := answer.Member(&l.pool, elem, []string{names[1]}, names[1])
		if err != nil || !ok {
			return false, err
		}
		name, ok := answer.String(v)
		if !ok {
			return false, nil
		}
		return l.m.ListEntry(l.p, l.method, name).Listed, nil
	})
	if err != nil || !removed {
		return msg, err
	}
	res := answer.Splice(m.Result, start, end, out)
	return answer.Splice(msg, m.ResultStart, m.ResultEnd, res), nil
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
