// Package scopetoken is the module's one implementation of the RFC 6749
// §3.3 scope grammar:
//
//	scope       = scope-token *( SP scope-token )
//	scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
//
// RFC 6750 §3 uses the same scope-token set in the WWW-Authenticate
// "scope" parameter. It imports the standard library only, so that leaf
// packages (challenge, prm) may use it.
package scopetoken
