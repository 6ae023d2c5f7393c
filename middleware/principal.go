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
	// ownerID, when set, is the owner key (ID or UserID) of the principal of the middleware's
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

// anonymousID is the [Principal.ID] and [Principal.UserID] of the
// anonymous principal. No authenticated principal has it: their IDs start
// with a digit, their user IDs with "u" or "c".
const anonymousID = "anonymous"

// ID returns a key identifying the principal and its client: issuer,
// subject, client and tenant, each length-prefixed so that no two
// principals share a key. Two tokens of the same user, client and tenant
// have the same ID whatever their scopes and expiry. It is the key of
// what belongs to one client of a user (a session when
// SessionConfig.BindClient is set); every per-principal bound is keyed by
// [Principal.UserID] instead. The anonymous principal's ID is
// "anonymous"; a nil principal's is "".
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
	return matchFields(id, p.Issuer, p.Subject, p.ClientID, p.Tenant)
}

// acting reports whether a token of subject sub and client clientID
// names no user: the client acting for itself (docs/sessions.md, "The
// user"). That is a token without "sub", or one whose "sub" is its
// client_id, which is how RFC 9068 §2.2 asks an authorization server to
// name the client of a client-credentials grant.
func acting(sub, clientID string) bool { return sub == "" || sub == clientID }

// UserID returns the key of the user the principal acts for: its
// issuer, subject and tenant, or, for a token that names no user (no
// "sub", or a "sub" equal to its client_id: the client acting for itself,
// as in a client-credentials grant), its issuer, tenant and client. Each
// part is length-prefixed, and the two forms start with "u" and "c", so
// that no two users share a key. Two tokens of the same user have the
// same UserID whatever their client, scopes and expiry: the middleware
// binds sessions to it (unless SessionConfig.BindClient), and keys every
// per-principal bound by it (session quotas, step-up counters, DPoP replay
// partitions; mcpguard proxy's rate limits), so that a client_id, which a
// client may choose at will (CIMD, dynamic registration), never
// multiplies a bound. The gosdk adapter hands it to the go-sdk as
// auth.TokenInfo.UserID. The anonymous principal's is "anonymous"; a nil
// principal's is "".
func (p *Principal) UserID() string {
	switch {
	case p == nil:
		return ""
	case p.Anonymous:
		return anonymousID
	case p.ownerID != "":
		return userOf(p.ownerID)
	}
	return string(appendUserID(nil, p.Issuer, p.Subject, p.ClientID, p.Tenant))
}

// isUserID reports whether id == p.UserID() without building it.
func (p *Principal) isUserID(id string) bool {
	switch {
	case p == nil:
		return id == ""
	case p.Anonymous:
		return id == anonymousID
	case p.ownerID != "":
		return id == userOf(p.ownerID)
	}
	if acting(p.Subject, p.ClientID) {
		return len(id) > 0 && id[0] == 'c' && matchFields(id[1:], p.Issuer, p.Tenant, p.ClientID)
	}
	return len(id) > 0 && id[0] == 'u' && matchFields(id[1:], p.Issuer, p.Subject, p.Tenant)
}

// appendUserID appends to b the UserID of a token of issuer iss, subject
// sub, client clientID and tenant.
func appendUserID(b []byte, iss, sub, clientID, tenant string) []byte {
	f := [...]string{iss, sub, tenant}
	b = append(b, 'u')
	if acting(sub, clientID) {
		f = [...]string{iss, tenant, clientID}
		b[len(b)-1] = 'c'
	}
	for _, s := range f {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	return b
}

// userOf returns the UserID of the principal whose ID or UserID is key
// (an owner record's key: a session's owner is one or the other), or
// key itself when it is neither.
func userOf(key string) string {
	if key == "" || key[0] < '0' || key[0] > '9' {
		return key // a UserID, "anonymous"
	}
	var f [4]string
	rest := key
	for i := range f {
		s, r, ok := cutField(rest)
		if !ok {
			return key
		}
		f[i], rest = s, r
	}
	if rest != "" {
		return key
	}
	return string(appendUserID(nil, f[0], f[1], f[2], f[3]))
}

// cutField cuts one length-prefixed field ("5:alice") off the front of id.
func cutField(id string) (field, rest string, ok bool) {
	// The length in decimal, as strconv.Itoa writes it, then ':'.
	i, n := 0, 0
	for ; i < len(id) && '0' <= id[i] && id[i] <= '9' && i < 10; i++ {
		n = n*10 + int(id[i]-'0')
	}
	if i == 0 || i == len(id) || id[i] != ':' || (id[0] == '0' && i > 1) || len(id)-i-1 < n {
		return "", "", false
	}
	return id[i+1 : i+1+n], id[i+1+n:], true
}

// matchFields reports whether id is exactly fields, each length-prefixed.
func matchFields(id string, fields ...string) bool {
	for _, f := range fields {
		s, rest, ok := cutField(id)
		if !ok || s != f {
			return false
		}
		id = rest
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
