// Package proxyinspect reads what a proxy.Proxy does not export, for
// the command (cmd/internal/proxycmd) and the tests: the effective
// policy ("mcpguard proxy -check"), the assertion issuer and JWK Set
// path, the number of open answers.
//
// The proxy answers an inspection only to a request whose context
// carries this package's unexported key, which no package outside this
// module can build: the capability is sealed, and the public surface of
// package proxy stays what an embedder needs (issue #26).
package proxyinspect

import (
	"context"
	"io"
	"net/http"
)

// View is what the proxy fills in for an inspection.
type View struct {
	// Describe writes the effective policy of every route, defaults
	// applied, as "mcpguard proxy -check" prints it.
	Describe func(io.Writer)
	// AssertionIssuer is the iss of the proxy's assertions.
	AssertionIssuer string
	// JWKSPath is the path of the proxy's JWK Set, or "" when no route
	// uses assertions.
	JWKSPath string
	// OpenAnswers returns the number of upstream answers being forwarded.
	OpenAnswers func() int
}

type key struct{}

// Of returns h's view: a zero View when h is not a proxy.
func Of(h http.Handler) View {
	v := &View{}
	r, _ := http.NewRequestWithContext(context.WithValue(context.Background(), key{}, v), http.MethodGet, "/", nil)
	h.ServeHTTP(discard{}, r)
	return *v
}

// From returns the View a request asks the proxy to fill in, or nil for
// every other request.
func From(ctx context.Context) *View {
	v, _ := ctx.Value(key{}).(*View)
	return v
}

// discard is the ResponseWriter of an inspection; the proxy writes
// nothing to it.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
