package validate

import "fmt"

// Confirmation is the "cnf" claim of a sender-constrained token (RFC 7800
// §3.1): the key its presenter must prove possession of. Only the DPoP
// confirmation method is understood.
type Confirmation struct {
	// JKT is "cnf"."jkt" (RFC 9449 §6.1): the base64url SHA-256 JWK
	// thumbprint (RFC 7638) of the DPoP public key. It is never empty and
	// is strict unpadded base64url; the caller compares it with the
	// thumbprint of the key that signed the DPoP proof.
	JKT string
}

// Wrapped errors for "cnf". They name members, never values.
var (
	errConfirmation       = fmt.Errorf("%w: token has cnf and AllowConfirmation is off", errSenderConstrained)
	errConfirmationMethod = fmt.Errorf("%w: cnf has a confirmation method other than jkt (only DPoP is verified)", errSenderConstrained)
	errConfirmationType   = fmt.Errorf("%w: cnf is not a JSON object", errMalformed)
	errConfirmationJKT    = fmt.Errorf("%w: cnf.jkt is not a non-empty base64url string", errMalformed)
)

// ParseConfirmation reads raw, the JSON text of a "cnf" member, by the
// rule [Validator.Validate] applies with Config.AllowConfirmation: a JSON
// object whose only member is "jkt", a non-empty strict unpadded
// base64url string (RFC 9449 §6.1). Anything else that is an object with
// other members wraps [Error] "sender_constrained" (a confirmation method such
// as mTLS's "x5t#S256", RFC 8705 §3.1, that this module cannot verify);
// a value that is not such an object, or a bad "jkt", wraps
// [Error] "malformed". Validators outside this package, such as token
// introspection (RFC 7662 §2.2), use it to read "cnf" exactly as this
// package does. The caller decides whether a confirmation is allowed at
// all.
func ParseConfirmation(raw string) (*Confirmation, error) {
	return parseConfirmation(raw)
}
