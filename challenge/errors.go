package challenge

import "errors"

// ErrSyntax reports a WWW-Authenticate value that does not follow the
// RFC 9110 §11.6.1 challenge syntax. Errors returned by [Parse] and
// [ParseAll] wrap it; their text never contains the header value.
var ErrSyntax = errors.New("challenge: syntax error")
