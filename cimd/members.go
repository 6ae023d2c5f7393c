package cimd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// maxMembers caps the number of top-level members of a client metadata
// object.
const maxMembers = 64

// members holds the top-level members of a JSON object by exact name.
// Looking members up by exact name, rather than letting encoding/json
// match field names case-insensitively, means "Client_ID" is an unknown
// member, not a second client_id.
type members map[string]json.RawMessage

// decodeMembers decodes data as exactly one JSON object and returns its
// top-level members. It refuses anything else (ErrMalformed), a repeated
// member name (ErrDuplicateMember) and more than maxMembers members.
func decodeMembers(data []byte) (members, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: not json", ErrMalformed)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: not a json object", ErrMalformed)
	}
	m := make(members)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: bad member name", ErrMalformed)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%w: bad member name", ErrMalformed)
		}
		if _, dup := m[name]; dup {
			return nil, ErrDuplicateMember
		}
		if len(m) == maxMembers {
			return nil, fmt.Errorf("%w: more than %d members", ErrInvalidClientMetadata, maxMembers)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: bad member value", ErrMalformed)
		}
		m[name] = v
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, fmt.Errorf("%w: unterminated object", ErrMalformed)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the object", ErrMalformed)
	}
	return m, nil
}

// has reports whether name is present with a non-null value.
func (m members) has(name string) bool {
	v, ok := m[name]
	return ok && string(v) != "null"
}

// decode unmarshals member name into v if present and not null. A JSON
// type mismatch is ErrInvalidClientMetadata naming the member.
func (m members) decode(name string, v any) error {
	if !m.has(name) {
		return nil
	}
	if err := json.Unmarshal(m[name], v); err != nil {
		return fmt.Errorf("%w: %s: wrong json type", ErrInvalidClientMetadata, name)
	}
	return nil
}

// text reads an optional string member holding display text: at most max
// bytes of valid UTF-8 with no control or bidirectional-formatting
// characters (which could disguise a name on a consent screen).
func (m members) text(name string, max int) (string, error) {
	var s string
	if err := m.decode(name, &s); err != nil {
		return "", err
	}
	if err := checkText(name, s, max); err != nil {
		return "", err
	}
	return s, nil
}

// texts reads an optional array of display-text strings. An empty array
// reads as nil.
func (m members) texts(name string, maxItems, maxLen int) ([]string, error) {
	var ss []string
	if err := m.decode(name, &ss); err != nil {
		return nil, err
	}
	if len(ss) > maxItems {
		return nil, fmt.Errorf("%w: %s: more than %d entries", ErrInvalidClientMetadata, name, maxItems)
	}
	if len(ss) == 0 {
		return nil, nil
	}
	for _, s := range ss {
		if s == "" {
			return nil, fmt.Errorf("%w: %s: empty entry", ErrInvalidClientMetadata, name)
		}
		if err := checkText(name, s, maxLen); err != nil {
			return nil, err
		}
	}
	return ss, nil
}

func checkText(name, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%w: %s: longer than %d bytes", ErrInvalidClientMetadata, name, max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s: invalid utf-8", ErrInvalidClientMetadata, name)
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError {
			return fmt.Errorf("%w: %s: control characters not allowed", ErrInvalidClientMetadata, name)
		}
	}
	return nil
}
