package challenge

import "errors"

// ErrSyntax reports a WWW-Authenticate value that does not follow the
// RFC 9110 §11.6.1 challenge syntax. Errors returned by [Parse] and
// [ParseAll] wrap it; their text never contains the header value.
var ErrSyntax = errors.New("challenge: syntax error")

// ErrNoParams reports a challenge that would render as a bare scheme, with
// no auth-param and no token68, which RFC 6750 §3 forbids for Bearer ("MUST
// be followed by one or more auth-param values"). [Challenge.Err] and
// [Write] return it.
var ErrNoParams = errors.New("challenge: challenge has no parameters")
