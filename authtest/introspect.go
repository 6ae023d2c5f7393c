package authtest

import (
	"crypto/subtle"
	"encoding/json"
	"maps"
	"net/http"
	"testing"
)

// IntrospectionMode selects how the introspection endpoint (RFC 7662)
// answers authenticated requests. Set it with [Issuer.SetIntrospection].
type IntrospectionMode int

const (
	// IntrospectionActive behaves like a real authorization server: a token
	// minted by [Issuer.Token] or [Issuer.OpaqueToken] is reported
	// {"active":true, …its claims…} while [Issuer.Now] is within its
	// nbf/exp; anything else is {"active":false} (RFC 7662 §2.2). This is the
	// default.
	IntrospectionActive IntrospectionMode = iota
	// IntrospectionInactive reports {"active":false} for every token.
	IntrospectionInactive
	// IntrospectionError answers 500 Internal Server Error.
	IntrospectionError
	// IntrospectionAlwaysActive is a lax (hostile) server: known tokens are
	// reported active with their claims even when expired or not yet valid,
	// and unknown tokens as {"active":true} with no other member. Use it to
	// check that the resource server enforces exp, iss and aud itself.
	IntrospectionAlwaysActive
)

// maxIntrospectionBody caps the form body the endpoint reads.
const maxIntrospectionBody = 64 << 10

// SetIntrospection sets the introspection endpoint's mode.
func (i *Issuer) SetIntrospection(mode IntrospectionMode) {
	i.mu.Lock()
	i.intro = mode
	i.mu.Unlock()
}

// IntrospectionCredentials returns the HTTP Basic client credentials the
// introspection endpoint accepts ([IssuerConfig.IntrospectionClientID] and
// [IssuerConfig.IntrospectionSecret]).
func (i *Issuer) IntrospectionCredentials() (clientID, secret string) {
	return i.cfg.IntrospectionClientID, i.cfg.IntrospectionSecret
}

// OpaqueToken returns a random opaque access token (not a JWT) that the
// introspection endpoint knows. Its claims are those [Issuer.Token] would
// put in a JWT with the same options; header and key options are ignored.
func (i *Issuer) OpaqueToken(t testing.TB, opts ...TokenOption) string {
	t.Helper()
	s := i.newSpec(opts)
	raw := "opaque-" + randomHex(24)
	i.mu.Lock()
	i.issued[raw] = maps.Clone(s.claims)
	i.mu.Unlock()
	return raw
}

// serveIntrospection implements RFC 7662 §2: POST, form-encoded "token",
// client authentication with HTTP Basic (RFC 6749 §2.3.1).
func (i *Issuer) serveIntrospection(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok || !equal(id, i.cfg.IntrospectionClientID) || !equal(secret, i.cfg.IntrospectionSecret) {
		w.Header().Set("WWW-Authenticate", `Basic realm="authtest"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxIntrospectionBody)
	if err := r.ParseForm(); err != nil || r.PostForm.Get("token") == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	token := r.PostForm.Get("token")
	i.mu.Lock()
	mode := i.intro
	claims, known := i.issued[token]
	i.mu.Unlock()

	switch mode {
	case IntrospectionError:
		http.Error(w, "authtest: introspection failed", http.StatusInternalServerError)
		return
	case IntrospectionInactive:
		known = false
	case IntrospectionAlwaysActive:
		if !known {
			writeJSON(w, http.StatusOK, map[string]any{"active": true})
			return
		}
	default:
		known = known && i.timely(claims)
	}
	if !known {
		writeJSON(w, http.StatusOK, map[string]any{"active": false})
		return
	}
	resp := maps.Clone(claims)
	resp["active"] = true
	writeJSON(w, http.StatusOK, resp)
}

// timely reports whether the issuer's clock is within the claims' nbf/exp.
// Claims of a non-numeric type are ignored.
func (i *Issuer) timely(claims map[string]any) bool {
	now := i.Now().Unix()
	if exp, ok := unixClaim(claims["exp"]); ok && now >= exp {
		return false
	}
	if nbf, ok := unixClaim(claims["nbf"]); ok && now < nbf {
		return false
	}
	return true
}

func unixClaim(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case float64:
		return int64(v), true
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	}
	return 0, false
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
