package introspect

import (
	"context"
	"errors"
	"net/http"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpguard/mcpguard/internal/fetch"
)

// TokenSource supplies the access token that [BearerToken] sends to the
// introspection endpoint (RFC 6750 §2.1). Unlike oauth2.TokenSource, Token
// takes the context of the introspection request, so obtaining a token is
// bounded by Config.Timeout and cancelled with the request: an
// oauth2.TokenSource has no context, and a token request inside it can
// hang a request path for as long as its own client allows
// (golang/oauth2#262). Token is called on every introspection request, so
// it must cache its token; [ClientCredentials] and [StaticToken] do.
type TokenSource interface {
	Token(ctx context.Context) (*oauth2.Token, error)
}

// tokenSourceFunc adapts a function to [TokenSource].
type tokenSourceFunc func(ctx context.Context) (*oauth2.Token, error)

// Token calls f(ctx).
func (f tokenSourceFunc) Token(ctx context.Context) (*oauth2.Token, error) { return f(ctx) }

var (
	_ TokenSource = tokenSourceFunc(nil)
	_ TokenSource = (*ccSource)(nil)
)

// StaticToken returns a [TokenSource] that always returns a copy of t,
// for tokens provisioned out of band. An expired t makes every request
// fail with [ErrClientAuth].
func StaticToken(t *oauth2.Token) TokenSource {
	return tokenSourceFunc(func(context.Context) (*oauth2.Token, error) {
		if t == nil {
			return nil, errors.New("introspect: nil static token")
		}
		c := *t
		return &c, nil
	})
}

// ClientCredentials returns a [TokenSource] that obtains tokens with the
// client credentials grant of cfg (RFC 6749 §4.4), using the context of
// the introspection request for each token request, and reuses a token
// until shortly before it expires (oauth2.Token.Valid). Concurrent callers
// share one token request; a caller whose context ends stops waiting for
// it. hc sends the token requests; if nil, a client from internal/fetch is
// used (10 s timeout, no redirects, no environment proxies, TLS 1.2+).
// cfg is copied.
func ClientCredentials(cfg clientcredentials.Config, hc *http.Client) TokenSource {
	if hc == nil {
		hc = fetch.NewClient(fetch.ClientConfig{})
	}
	return &ccSource{cfg: cfg, hc: hc, sem: make(chan struct{}, 1)}
}

// ccSource is the [TokenSource] of [ClientCredentials].
type ccSource struct {
	cfg clientcredentials.Config
	hc  *http.Client
	sem chan struct{} // held while reading or renewing tok
	tok *oauth2.Token
}

func (s *ccSource) Token(ctx context.Context) (*oauth2.Token, error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-s.sem }()
	if s.tok.Valid() {
		c := *s.tok
		return &c, nil
	}
	// x/oauth2 takes its HTTP client from the context only; this value
	// never leaves the token request.
	t, err := s.cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, s.hc))
	if err != nil {
		return nil, err
	}
	s.tok = t
	c := *t
	return &c, nil
}
