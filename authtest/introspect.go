package authtest

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
)

// maxIntrospectionBody caps the form body the endpoint reads.
const maxIntrospectionBody = 64 << 10

// serveIntrospection implements RFC 7662 §2: POST, form-encoded "token",
// client authentication with HTTP Basic (RFC 6749 §2.3.1). mode is "",
// "inactive" or "always-active" (see [Fault]).
func (i *Issuer) serveIntrospection(w http.ResponseWriter, r *http.Request, mode Fault) {
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
	claims, known := i.issued[token]
	i.mu.Unlock()

	switch mode {
	case faultInactive:
		known = false
	case faultAlwaysActive:
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
	resp := cloneClaims(claims)
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
