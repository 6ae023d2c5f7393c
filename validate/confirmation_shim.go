package validate

// SHIM: this file stands in for the Confirmation API of branch json and
// is dropped at merge in favour of that branch's version.

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrSenderConstrained: the token carries "cnf" (RFC 7800; RFC 9449 §6,
// RFC 8705 §3) and Config.AllowConfirmation is false.
var ErrSenderConstrained = errors.New("validate: sender-constrained token")

// Confirmation is a token's "cnf" claim (RFC 7800 §3.1).
type Confirmation struct {
	// JKT is cnf.jkt, the RFC 7638 thumbprint of the DPoP key the token
	// is bound to (RFC 9449 §6.1), or empty.
	JKT string
}

var errCnfType = fmt.Errorf("%w: cnf is not an object with a string jkt", ErrMalformed)

// ParseConfirmation decodes the raw JSON of a "cnf" member ("" or nil:
// absent). With allow false a present cnf is [ErrSenderConstrained].
func ParseConfirmation(raw []byte, allow bool) (*Confirmation, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if !allow {
		return nil, fmt.Errorf("%w (%w)", ErrSenderConstrained, ErrType)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errCnfType
	}
	c := &Confirmation{}
	if j, ok := m["jkt"]; ok {
		if err := json.Unmarshal(j, &c.JKT); err != nil {
			return nil, errCnfType
		}
	}
	return c, nil
}
