package cimd

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// maxMembers caps the number of top-level members of a client metadata
// object.
const maxMembers = 64

// members holds the top-level members of a JSON object by exact name, as
// raw JSON values (sub-slices of the document).
type members map[string][]byte

// metadataNames are the client metadata members this package reads
// (RFC 7591 §2 and §3.1, and the Client ID Metadata Document's client_id);
// a case variant of one of them ("Client_ID", "redirect_URIs") is refused
// rather than ignored as unknown.
func metadataNames() []string {
	return []string{
		"client_id", "client_secret", "client_secret_expires_at", "software_statement",
		"client_name", "redirect_uris", "grant_types", "response_types", "token_endpoint_auth_method",
		"application_type", "scope", "contacts", "client_uri", "logo_uri", "tos_uri", "policy_uri",
		"jwks_uri", "jwks", "software_id", "software_version",
	}
}

// decodeMembers reads data with internal/strictjson, the module's one
// JSON reader, and returns its top-level members. data must be exactly
// one JSON object in valid UTF-8 without repeated member names at any
// depth, without two top-level names equal under case folding and
// without a case variant of a name of read. It refuses anything else
// (errMalformed; invalid UTF-8 is errInvalidClientMetadata), a repeated
// or case-variant name (errDuplicateMember) and more than maxMembers
// members.
func decodeMembers(data []byte, read []string) (members, error) {
	m := make(members)
	errTooMany := fmt.Errorf("%w: more than %d members", errInvalidClientMetadata, maxMembers)
	err := strictjson.Members(data, read, func(name, v []byte) error {
		if len(m) == maxMembers {
			return errTooMany
		}
		m[string(name)] = v
		return nil
	})
	switch {
	case err == nil:
		return m, nil
	case err == errTooMany:
		return nil, err
	case errors.Is(err, strictjson.ErrDuplicateName), errors.Is(err, strictjson.ErrCaseVariant):
		return nil, errDuplicateMember
	case errors.Is(err, strictjson.ErrInvalidUTF8):
		return nil, fmt.Errorf("%w: invalid utf-8", errInvalidClientMetadata)
	case errors.Is(err, strictjson.ErrNotObject):
		return nil, fmt.Errorf("%w: not a json object", errMalformed)
	}
	return nil, fmt.Errorf("%w: not json", errMalformed)
}

// has reports whether name is present with a non-null value.
func (m members) has(name string) bool {
	v, ok := m[name]
	return ok && string(v) != "null"
}

// decode unmarshals member name into v if present and not null, with
// strictjson.Unmarshal. A JSON type mismatch is errInvalidClientMetadata
// naming the member.
func (m members) decode(name string, v any) error {
	if !m.has(name) {
		return nil
	}
	if err := strictjson.Unmarshal(m[name], v); err != nil {
		return fmt.Errorf("%w: %s: wrong json type", errInvalidClientMetadata, name)
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
		return nil, fmt.Errorf("%w: %s: more than %d entries", errInvalidClientMetadata, name, maxItems)
	}
	if len(ss) == 0 {
		return nil, nil
	}
	for _, s := range ss {
		if s == "" {
			return nil, fmt.Errorf("%w: %s: empty entry", errInvalidClientMetadata, name)
		}
		if err := checkText(name, s, maxLen); err != nil {
			return nil, err
		}
	}
	return ss, nil
}

func checkText(name, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%w: %s: longer than %d bytes", errInvalidClientMetadata, name, max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s: invalid utf-8", errInvalidClientMetadata, name)
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError {
			return fmt.Errorf("%w: %s: control characters not allowed", errInvalidClientMetadata, name)
		}
	}
	return nil
}
