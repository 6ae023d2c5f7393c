package stdiobridge

import (
	"github.com/go-json-experiment/json/jsontext"
)

// Client roots (MCP roots/list) name directories a client offers a
// server; a server may take them as what it may access (the reference
// filesystem server replaces its allowed directories with them). Unless
// Config.ForwardRoots, the bridge hides them: the roots capability is
// removed from initialize, roots/list_changed is dropped, and a child's
// roots/list is answered -32601 by the bridge, never reaching the client.

var (
	capsNames  = []string{"capabilities"}
	rootsNames = []string{"roots"}
)

// withoutRoots returns initialize m without params.capabilities.roots
// (m.raw itself when there is none).
func (b *Bridge) withoutRoots(m message) []byte {
	caps, cs, ce := m.paramMember(&b.pool, capsNames, "capabilities")
	if caps == nil || caps[0] != '{' {
		return m.raw
	}
	out := []byte{'{'}
	found := false
	err := b.pool.MemberSpans(caps, rootsNames, func(name []byte, start, end int) error {
		if string(name) == "roots" {
			found = true
			return nil
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		var err error
		if out, err = jsontext.AppendQuote(out, name); err != nil {
			return err
		}
		out = append(out, ':')
		out = append(out, caps[start:end]...)
		return nil
	})
	if err != nil || !found {
		return m.raw
	}
	out = append(out, '}')
	return splice(m.raw, cs, ce, out)
}
