package devas

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/internal/scopetoken"
)

// Input bounds.
const (
	maxURLBytes    = 2048     // client_id, redirect_uri, resource
	maxParamBytes  = 2048     // any other single parameter (state, code, …)
	maxScopeBytes  = 1024     // scope
	maxScopes      = 32       // scope tokens in one request
	maxQueryBytes  = 16 << 10 // an /authorize query string
	maxFormBytes   = 16 << 10 // a POST body
	maxNameLen     = 64       // subject, tenant
	minVerifierLen = 43       // RFC 7636 §4.1
	maxVerifierLen = 128
)

// oauthError is an OAuth error code with a fixed, short description safe
// to show: never an unverified value, never an internal error text.
type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func (e *oauthError) Error() string { return "devas: " + e.Code + ": " + e.Description }

// errInvalidClient is the one answer to a client that could not be looked
// up or authenticated (RFC 6749 §5.2), whatever the cause: fixed, so that
// it cannot act as an oracle for scanning internal hosts through
// client_id URLs.
func errInvalidClient() *oauthError {
	return &oauthError{"invalid_client", "the client is unknown or its metadata could not be used"}
}

func errInvalidRequest(desc string) *oauthError { return &oauthError{"invalid_request", desc} }

// params reads single-valued OAuth parameters (RFC 6749 §3.1: "Request
// and response parameters MUST NOT be included more than once").
type params url.Values

// get returns the parameter, "" if absent. A repeated parameter or one
// longer than max is an invalid_request.
func (p params) get(name string, max int) (string, *oauthError) {
	v := p[name]
	switch {
	case len(v) == 0:
		return "", nil
	case len(v) > 1:
		return "", errInvalidRequest(name + " repeated")
	case len(v[0]) > max:
		return "", errInvalidRequest(name + " too long")
	}
	return v[0], nil
}

// require is get for a parameter that must be present and non-empty.
func (p params) require(name string, max int) (string, *oauthError) {
	v, err := p.get(name, max)
	if err == nil && v == "" {
		err = errInvalidRequest(name + " missing")
	}
	return v, err
}

// readForm reads an application/x-www-form-urlencoded POST body of at
// most maxFormBytes. The URL query is ignored: OAuth parameters of POST
// requests belong in the body.
func readForm(w http.ResponseWriter, r *http.Request) (params, *oauthError) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, errInvalidRequest("content type must be application/x-www-form-urlencoded")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxFormBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, errInvalidRequest("request body too large")
		}
		return nil, errInvalidRequest("unreadable request body")
	}
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, errInvalidRequest("malformed request body")
	}
	return params(v), nil
}

// parseScope splits a scope parameter (RFC 6749 §3.3) into distinct
// tokens, in order.
func parseScope(s string) ([]string, bool) {
	if s == "" {
		return nil, true
	}
	var out []string
	for tok := range strings.SplitSeq(s, " ") {
		if !validScopeToken(tok) {
			return nil, false
		}
		if !slices.Contains(out, tok) {
			out = append(out, tok)
		}
	}
	return out, len(out) <= maxScopes
}

// validScopeToken reports whether s is an RFC 6749 §3.3 scope-token:
// 1*( %x21 / %x23-5B / %x5D-7E ).
func validScopeToken(s string) bool { return len(s) <= 256 && scopetoken.Valid(s) }

// validName reports whether s is a subject or tenant this server accepts.
func validName(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isUnreserved(c) && c != '+' {
			return false
		}
	}
	return true
}

// isUnreserved reports whether c is an RFC 3986 unreserved character, the
// PKCE code_verifier alphabet (RFC 7636 §4.1).
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// validChallenge reports whether s can be an S256 code_challenge:
// BASE64URL(SHA256(verifier)) without padding is 43 characters. A
// dpop_jkt (an RFC 7638 SHA-256 thumbprint) has the same form.
func validChallenge(s string) bool {
	if len(s) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil
}

// verifyPKCE checks an RFC 7636 §4.6 S256 code_verifier against the
// challenge, in constant time.
func verifyPKCE(verifier, challenge string) bool {
	if len(verifier) < minVerifierLen || len(verifier) > maxVerifierLen {
		return false
	}
	for i := 0; i < len(verifier); i++ {
		if !isUnreserved(verifier[i]) {
			return false
		}
	}
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}

// randomToken returns 32 random bytes (256 bits), base64url-encoded.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// newJTI returns 16 random bytes (128 bits), base64url-encoded: a
// consent nonce or a refresh token family.
func newJTI() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashKey is the store key for a bearer secret (code, refresh token,
// consent id): its SHA-256, so that map lookups leak nothing useful about
// the secret through timing.
func hashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return string(sum[:])
}

// parseLoginHint splits "subject@tenant" or "subject".
func parseLoginHint(hint, defaultTenant string) (subject, tenant string, ok bool) {
	subject, tenant, found := strings.Cut(hint, "@")
	if !found {
		tenant = defaultTenant
	}
	if !validName(subject) || !validName(tenant) {
		return "", "", false
	}
	return subject, tenant, true
}
