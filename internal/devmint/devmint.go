// Package devmint mints tokens of a devas.Server directly, without the
// authorization flow, for the command's -dev-as banner, the example and
// the tests. A user's tests mint tokens with package authtest, or get
// them from a devas.Server through the flow (issue #26 took minting out
// of devas's public surface).
//
// The server answers only a request whose context carries this
// package's unexported key, which no package outside this module can
// build.
package devmint

import (
	"context"
	"errors"
	"net/http"
)

// The errors of the minting functions. The text is part of the API.
var (
	// ErrUnknownResource: the resource is not one of the server's
	// Config.Resources (RFC 8707 §2 "invalid_target").
	ErrUnknownResource = errors.New("devas: unknown resource")
	// ErrInvalidArgument: an argument is empty or malformed.
	ErrInvalidArgument = errors.New("devas: invalid argument")
)

// Minter is what a devas.Server fills in.
type Minter struct {
	// IssueToken mints an access token as one issued by the token
	// endpoint: a compact JWS with header typ "at+jwt" and kid, and
	// claims iss, sub, aud (resource, a string), client_id, scope
	// (space-delimited, omitted when empty), tenant (omitted when empty),
	// jti, iat, nbf and exp (RFC 9068 §2.2), valid for Config.TokenTTL.
	// resource must be one of Config.Resources ([ErrUnknownResource]);
	// subject and clientID must be non-empty and scopes must be scope
	// tokens ([ErrInvalidArgument]); scopes are not checked against
	// Config.Scopes, so tests can mint tokens the flows would refuse.
	IssueToken func(subject, tenant, clientID, resource string, scopes []string) (string, error)
	// IssueBoundToken is IssueToken for a token bound to the DPoP key
	// whose RFC 7638 thumbprint is jkt (cnf.jkt, RFC 9449 §6.1).
	IssueBoundToken func(jkt, subject, tenant, clientID, resource string, scopes []string) (string, error)
}

type key struct{}

// Of returns h's minter; its functions are nil when h is not a
// devas.Server.
func Of(h http.Handler) Minter {
	m := &Minter{}
	r, _ := http.NewRequestWithContext(context.WithValue(context.Background(), key{}, m), http.MethodGet, "/", nil)
	h.ServeHTTP(discard{}, r)
	return *m
}

// From returns the Minter a request asks the server to fill in, or nil
// for every other request.
func From(ctx context.Context) *Minter {
	m, _ := ctx.Value(key{}).(*Minter)
	return m
}

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
