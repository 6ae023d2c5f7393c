package challenge

import (
	"fmt"
	"strings"

	"github.com/mcpguard/mcpguard/internal/httptoken"
)

// ParseAll parses the WWW-Authenticate field lines of a response, as
// returned by resp.Header.Values("WWW-Authenticate"), and concatenates the
// challenges in order; pass []string{v} for a single field value. Each
// line is an RFC 9110 §11.6.1 comma-separated list of challenges, each an
// auth-scheme followed by either a token68 or a list of auth-params whose
// values are tokens or quoted-strings (backslash escapes are removed).
// Scheme and parameter names are case-insensitive; parameter names are
// reported in lower case and the Bearer scheme as "Bearer". Empty list
// elements are ignored (RFC 9110 §5.6.1). A parameter repeated within one
// challenge is an error (RFC 9110 §11.2). The RFC 6750 and RFC 9728
// parameters are mapped to their fields for every scheme (DPoP uses the
// same names); other parameters go to Params. Values are reported as
// received, without the rendering rules of [Challenge.String]; scope is
// split on spaces. Empty or all-comma lines yield no challenges and no
// error. Errors wrap [ErrSyntax].
func ParseAll(values []string) ([]Challenge, error) {
	var out []Challenge
	for _, v := range values {
		cs, err := parse(v)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// parse parses one WWW-Authenticate field value (see [ParseAll]).
func parse(header string) ([]Challenge, error) {
	p := parser{s: header}
	var out []Challenge
	for {
		p.skipListSep()
		if p.eof() {
			return out, nil
		}
		c, err := p.challenge()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

type parser struct {
	s   string
	pos int
}

func (p *parser) eof() bool { return p.pos >= len(p.s) }

func (p *parser) errorf(what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrSyntax, what, p.pos)
}

// skipOWS skips optional whitespace (SP / HTAB) and reports how much.
func (p *parser) skipOWS() int {
	start := p.pos
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
	return p.pos - start
}

// skipListSep skips OWS and empty list elements.
func (p *parser) skipListSep() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == ',') {
		p.pos++
	}
}

func (p *parser) token() string {
	start := p.pos
	for p.pos < len(p.s) && httptoken.ValidByte(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// atListEnd reports whether only OWS remains before a comma or the end,
// without consuming anything.
func (p *parser) atListEnd(from int) bool {
	i := from
	for i < len(p.s) && (p.s[i] == ' ' || p.s[i] == '\t') {
		i++
	}
	return i == len(p.s) || p.s[i] == ','
}

// token68 consumes a token68 at the current position if one is there and is
// followed by OWS and then a comma or the end of the value.
func (p *parser) token68() (string, bool) {
	i := p.pos
	for i < len(p.s) && isToken68Char(p.s[i]) {
		i++
	}
	if i == p.pos {
		return "", false
	}
	for i < len(p.s) && p.s[i] == '=' {
		i++
	}
	if !p.atListEnd(i) {
		return "", false
	}
	t := p.s[p.pos:i]
	p.pos = i
	return t, true
}

// paramAhead reports whether, after skipping list separators from the
// current position, the next list element is an auth-param (token BWS "="),
// as opposed to a new challenge or the end. It does not consume.
func (p *parser) paramAhead() bool {
	save := p.pos
	defer func() { p.pos = save }()
	p.skipListSep()
	if p.token() == "" {
		return false
	}
	p.skipOWS()
	return !p.eof() && p.s[p.pos] == '='
}

// challenge parses one challenge starting at an auth-scheme.
func (p *parser) challenge() (Challenge, error) {
	scheme := p.token()
	if scheme == "" {
		return Challenge{}, p.errorf("expected auth-scheme")
	}
	c := Challenge{Scheme: scheme}
	if strings.EqualFold(scheme, "Bearer") {
		c.Scheme = "Bearer"
	}
	if p.eof() || p.s[p.pos] == ',' {
		return c, nil
	}
	if p.skipOWS() == 0 {
		return Challenge{}, p.errorf("expected space after auth-scheme")
	}
	if p.eof() {
		return c, nil
	}
	if t, ok := p.token68(); ok {
		c.Token68 = t
		p.skipOWS()
		return c, nil
	}
	seen := make(map[string]bool)
	if p.s[p.pos] == ',' && !p.paramAhead() {
		return c, nil // "Scheme ," : no params; the comma ends the element
	}
	for {
		p.skipListSep()
		name := strings.ToLower(p.token())
		if name == "" {
			return Challenge{}, p.errorf("expected auth-param name")
		}
		p.skipOWS()
		if p.eof() || p.s[p.pos] != '=' {
			return Challenge{}, p.errorf("expected '='")
		}
		p.pos++
		p.skipOWS()
		value, err := p.value()
		if err != nil {
			return Challenge{}, err
		}
		if seen[name] {
			return Challenge{}, p.errorf("duplicate auth-param")
		}
		seen[name] = true
		c.set(name, value)
		p.skipOWS()
		if p.eof() {
			return c, nil
		}
		if p.s[p.pos] != ',' {
			return Challenge{}, p.errorf("expected ',' after auth-param")
		}
		if !p.paramAhead() {
			return c, nil
		}
	}
}

// value parses an auth-param value: token / quoted-string.
func (p *parser) value() (string, error) {
	if p.eof() {
		return "", p.errorf("expected auth-param value")
	}
	if p.s[p.pos] != '"' {
		v := p.token()
		if v == "" {
			return "", p.errorf("expected token or quoted-string")
		}
		return v, nil
	}
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		ch := p.s[p.pos]
		switch {
		case ch == '"':
			p.pos++
			return b.String(), nil
		case ch == '\\':
			p.pos++
			if p.eof() {
				return "", p.errorf("unterminated quoted-pair")
			}
			ch = p.s[p.pos]
			if !isQuotedPairChar(ch) {
				return "", p.errorf("invalid quoted-pair")
			}
		case !isQdtext(ch):
			return "", p.errorf("invalid character in quoted-string")
		}
		b.WriteByte(ch)
		p.pos++
	}
	return "", p.errorf("unterminated quoted-string")
}

// isQdtext: HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text (RFC 9110 §5.6.4).
func isQdtext(c byte) bool {
	return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) ||
		(c >= 0x5d && c <= 0x7e) || c >= 0x80
}

// isQuotedPairChar: HTAB / SP / VCHAR / obs-text (RFC 9110 §5.6.4).
func isQuotedPairChar(c byte) bool {
	return c == '\t' || (c >= 0x20 && c != 0x7f)
}

// set stores a parsed auth-param (name already lower-cased).
func (c *Challenge) set(name, value string) {
	switch name {
	case "realm":
		c.Realm = value
	case "error":
		c.Error = ErrorCode(value)
	case "error_description":
		c.ErrorDescription = value
	case "scope":
		for s := range strings.SplitSeq(value, " ") {
			if s != "" {
				c.Scope = append(c.Scope, s)
			}
		}
	case "resource_metadata":
		c.ResourceMetadata = value
	default:
		if c.Params == nil {
			c.Params = make(map[string]string)
		}
		c.Params[name] = value
	}
}
