package middleware

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/validate"
)

// Principal is the authenticated caller of a request: the verified access
// token's identity (RFC 9068 §2.2). [Middleware.Handler] puts it in the
// request context; read it with [PrincipalFromContext]. Per MCP, derive
// user identity from Subject (and Issuer), never from request arguments.
type Principal struct {
	// Subject is the token's "sub".
	Subject string
	// Issuer is the token's "iss".
	Issuer string
	// ClientID is the token's "client_id" (or "azp").
	ClientID string
	// Tenant is the token's tenant claim (validate.Config.TenantClaim), or
	// empty. See [TenantFromContext] and [CheckTenant].
	Tenant string
	// Scopes are the granted scopes ("scope"), shared with Claims.Scopes.
	// slices.Contains(p.Scopes, s) checks one exactly (RFC 6749 §3.3
	// scope tokens are case-sensitive), without Config.ScopeImplies; to
	// have the middleware decide with them, use the operation policy,
	// [Middleware.RequireScopes] or [Middleware.Permits].
	Scopes []string
	// Expiry is the token's "exp".
	Expiry time.Time
	// Claims are the verified claims, for claims not copied above
	// ([validate.Claims.Decode]). Nil for the anonymous principal.
	Claims *validate.Claims
	// SenderConstrained reports a DPoP-bound token with a valid proof of
	// its key (RFC 9449 §7); KeyThumbprint is that key's RFC 7638
	// thumbprint, the token's cnf.jkt. Empty for bearer tokens.
	SenderConstrained bool
	KeyThumbprint     string

	// Anonymous is true for the principal of a request served without a
	// token because its operation is public (OperationPolicy.Public). Every
	// other field is then zero: no subject, no tenant, no scope.
	Anonymous bool

	// grant is the operation Handler authorized, for RequireScopes and
	// the labels of later decisions.
	grant *grant
	// nextNonce is the DPoP-Nonce the answer to this request sends, if
	// any (dpop.Verifier.NextNonce).
	nextNonce string
	// ownerID, when set, is the ID of the principal of the middleware's
	// internal DELETE that closes a session it ended (session.go).
	ownerID string
}

// newPrincipal returns the principal of c.
func newPrincipal(c *validate.Claims) *Principal {
	return &Principal{
		Subject:  c.Subject,
		Issuer:   c.Issuer,
		ClientID: c.ClientID,
		Tenant:   c.Tenant,
		Scopes:   c.Scopes,
		Expiry:   c.Expiry,
		Claims:   c,
	}
}

// withPrincipal returns a shallow copy of r whose context carries p
// ([ContextWithPrincipal]).
func withPrincipal(r *http.Request, p *Principal) *http.Request {
	return r.WithContext(ContextWithPrincipal(r.Context(), p))
}

// stepUpID identifies the principal for step-up counting: issuer, subject
// and client, each length-prefixed so that no two principals share an ID.
func (p *Principal) stepUpID() string {
	return strconv.Itoa(len(p.Issuer)) + ":" + p.Issuer + "\x00" +
		strconv.Itoa(len(p.Subject)) + ":" + p.Subject + "\x00" + p.ClientID
}

// anonymousID is the [Principal.ID] of the anonymous principal. No
// authenticated principal has it: their IDs start with a digit.
const anonymousID = "anonymous"

// ID returns a key identifying the principal, for binding state such as an
// MCP session to it: issuer, subject, client and tenant, each
// length-prefixed so that no two principals share a key. Two tokens of the
// same user, client and tenant have the same ID whatever their scopes and
// expiry. The anonymous principal's ID is "anonymous"; a nil principal's
// is "".
func (p *Principal) ID() string {
	switch {
	case p == nil:
		return ""
	case p.Anonymous:
		return anonymousID
	case p.ownerID != "":
		return p.ownerID
	}
	var b strings.Builder
	for _, f := range [...]string{p.Issuer, p.Subject, p.ClientID, p.Tenant} {
		b.WriteString(strconv.Itoa(len(f)))
		b.WriteByte(':')
		b.WriteString(f)
	}
	return b.String()
}

// isID reports whether id == p.ID() without building p.ID(): the session
// check of every request allocates nothing.
func (p *Principal) isID(id string) bool {
	switch {
	case p == nil:
		return id == ""
	case p.Anonymous:
		return id == anonymousID
	case p.ownerID != "":
		return id == p.ownerID
	}
	for _, f := range [...]string{p.Issuer, p.Subject, p.ClientID, p.Tenant} {
		// f's length in decimal, as strconv.Itoa writes it, then ':'.
		i, n := 0, 0
		for ; i < len(id) && '0' <= id[i] && id[i] <= '9' && i < 10; i++ {
			n = n*10 + int(id[i]-'0')
		}
		if i == 0 || i == len(id) || id[i] != ':' || (id[0] == '0' && i > 1) ||
			n != len(f) || len(id)-i-1 < n || id[i+1:i+1+n] != f {
			return false
		}
		id = id[i+1+n:]
	}
	return id == ""
}

type principalKey struct{}

// PrincipalFromContext returns the principal [Middleware.Handler] stored in
// ctx, as go-sdk's auth.TokenInfoFromContext does for its TokenInfo. In an
// MCP SDK tool handler, pass the request's context (for the go-sdk, the
// context the handler receives).
func PrincipalFromContext(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok && p != nil
}

// ContextWithPrincipal returns a copy of ctx carrying p, for tests and for
// custom chains that authenticate with [Middleware.Authenticate]. It is
// context.WithValue with an unexported key, which is how
// [Middleware.Handler] passes the principal too.
func ContextWithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}
