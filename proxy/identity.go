package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/internal/strictjson"
	"github.com/mcpguard/mcpguard/middleware"
)

// errIdentityUnavailable: the authorization server of an exchange could
// not be reached (503, not 502).
var errIdentityUnavailable = errors.New("proxy: identity source unavailable")

// identity sets a route's upstream identity on the request state.
type identity interface {
	set(ctx context.Context, st *reqState, p *middleware.Principal, r *http.Request) error
	// mode names it, for logs and -check.
	mode() string
}

// assertionIdentity: a JWT signed by the proxy.
type assertionIdentity struct {
	a      *assertions
	header string // canonical
	bearer bool   // "Bearer " prefix (Authorization)
}

func (i *assertionIdentity) mode() string { return modeAssertion }

func (i *assertionIdentity) set(_ context.Context, st *reqState, p *middleware.Principal, _ *http.Request) error {
	if p.Anonymous {
		return nil // a public operation: nobody to assert
	}
	v, err := i.a.get(p)
	if err != nil {
		return err
	}
	st.idName, st.idValue = i.header, v
	return nil
}

// headersIdentity: plain identity headers (loopback upstreams only).
type headersIdentity struct{}

func (headersIdentity) mode() string { return modeHeaders }

func (headersIdentity) set(_ context.Context, st *reqState, _ *middleware.Principal, _ *http.Request) error {
	st.idHeaders = true
	return nil
}

// exchangeIdentity: an RFC 8693 token exchange at the authorization
// server, cached per principal and grant until shortly before expiry, one
// exchange at a time per principal (single flight).
type exchangeIdentity struct {
	cfg      Exchange
	audience string
	resource string
	header   string
	bearer   bool
	client   *http.Client
	now      func() time.Time
	// endpoints discovers the token endpoint when cfg.TokenEndpoint is
	// empty (exchange_discovery.go).
	endpoints *tokenEndpoints

	flight singleflight.Group
	mu     sync.Mutex
	cache  map[string]cachedToken
}

func (e *exchangeIdentity) mode() string { return modeExchange }

// RFC 8693 §2.1 and §3 identifiers.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess    = "urn:ietf:params:oauth:token-type:access_token"
)

func (e *exchangeIdentity) set(ctx context.Context, st *reqState, p *middleware.Principal, r *http.Request) error {
	if p.Anonymous {
		return nil
	}
	key := principalKey(p)
	now := e.now()
	e.mu.Lock()
	c, ok := e.cache[key]
	e.mu.Unlock()
	if ok && now.Before(c.refresh) {
		st.idName, st.idValue = e.header, c.token
		return nil
	}
	subject, err := clientToken(r)
	if err != nil {
		return err
	}
	v, err, _ := e.flight.Do(key, func() (any, error) {
		// The exchange outlives a client that leaves: others may wait on it.
		return e.exchange(context.WithoutCancel(ctx), p.Issuer, subject, key)
	})
	if err != nil {
		return err
	}
	st.idName, st.idValue = e.header, v.(string)
	return nil
}

// clientToken returns the client's access token from the Authorization
// header (Bearer or DPoP scheme), which the middleware already validated.
func clientToken(r *http.Request) (string, error) {
	v := r.Header.Get("Authorization")
	if i := strings.IndexByte(v, ' '); i > 0 {
		if s := strings.ToLower(v[:i]); s == "bearer" || s == "dpop" {
			if t := strings.TrimLeft(v[i+1:], " "); t != "" {
				return t, nil
			}
		}
	}
	return "", errors.New("proxy: no client token to exchange")
}

// exchangeTimeout bounds one token exchange.
const exchangeTimeout = 10 * time.Second

func (e *exchangeIdentity) exchange(ctx context.Context, issuer, subject, key string) (string, error) {
	endpoint := e.cfg.TokenEndpoint
	if endpoint == "" {
		ep, err := e.endpoints.get(ctx, issuer)
		if err != nil {
			return "", err
		}
		endpoint = ep
	}
	ctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	defer cancel()
	form := url.Values{
		"grant_type":           {grantTokenExchange},
		"subject_token":        {subject},
		"subject_token_type":   {tokenTypeAccess},
		"requested_token_type": {tokenTypeAccess},
		"audience":             {e.audience},
		"resource":             {e.resource},
	}
	if len(e.cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(e.cfg.Scopes, " "))
	}
	hdr := http.Header{}
	hdr.Set("Authorization", "Basic "+basicAuth(e.cfg.ClientID, e.cfg.ClientSecret))
	start := e.now()
	resp, err := fetch.PostForm(ctx, e.client, endpoint, form, hdr, defaultExchangeMaxResponse)
	if err != nil {
		var se *fetch.StatusError
		if errors.As(err, &se) && se.Code < 500 {
			return "", fmt.Errorf("token exchange refused: status %d", se.Code)
		}
		return "", fmt.Errorf("%w: token exchange: %w", errIdentityUnavailable, err)
	}
	var tr struct {
		AccessToken     string `json:"access_token"`
		IssuedTokenType string `json:"issued_token_type"`
		TokenType       string `json:"token_type"`
		ExpiresIn       int64  `json:"expires_in"`
	}
	if err := strictjson.Unmarshal(resp.Body, &tr); err != nil {
		return "", fmt.Errorf("token exchange: response: %w", err)
	}
	if tr.AccessToken == "" || !strings.EqualFold(tr.TokenType, "bearer") && !strings.EqualFold(tr.TokenType, "N_A") {
		return "", fmt.Errorf("token exchange: response without a bearer access_token")
	}
	value := tr.AccessToken
	if e.bearer {
		value = "Bearer " + value
	}
	if tr.ExpiresIn > 0 {
		life := time.Duration(tr.ExpiresIn) * time.Second
		margin := min(defaultExchangeMargin, life/10)
		e.mu.Lock()
		if len(e.cache) >= defaultIdentityCacheKeys {
			clear(e.cache)
		}
		e.cache[key] = cachedToken{token: value, refresh: start.Add(life - margin)}
		e.mu.Unlock()
	}
	return value, nil
}

// basicAuth is the RFC 6749 §2.3.1 client_secret_basic credential: the
// form-urlencoded ID and secret, base64 of "id:secret".
func basicAuth(id, secret string) string {
	r := &http.Request{Header: http.Header{}}
	r.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}
