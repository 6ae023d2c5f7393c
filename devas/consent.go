package devas

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// csrfCookie holds the browser's consent token (double-submit CSRF
// protection; the sealed request is also bound to it).
const csrfCookie = "devas_csrf"

// consentForm is the authorization request a consent page carries in its
// request_id field, MACed with the server's consentKey: the server keeps
// nothing per consent page, so unauthenticated GET /authorize requests
// cannot fill a store and lock other users out. The request stays bound
// to the CSRF cookie it was shown with, expires after consentTTL, and is
// single-use through the bounded spent set (keyed by Nonce).
type consentForm struct {
	Req     authzRequest
	CSRF    string
	Nonce   string
	Expires time.Time
}

// maxConsentFormBytes caps the request_id value, so that the consent POST
// stays within maxFormBytes. Only requests with very long parameters
// (state, redirect_uri, client_id of kilobytes) reach it.
const maxConsentFormBytes = 12 << 10

// sealConsent returns the request_id value for f: base64url(JSON of f),
// ".", base64url(HMAC-SHA256 of the first part).
func (s *Server) sealConsent(f *consentForm) (string, bool) {
	b, err := json.Marshal(f)
	if err != nil {
		return "", false
	}
	body := base64.RawURLEncoding.EncodeToString(b)
	mac := hmac.New(sha256.New, s.consentKey)
	mac.Write([]byte(body))
	tok := body + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	return tok, len(tok) <= maxConsentFormBytes
}

// openConsent verifies a request_id value and returns its unexpired form.
func (s *Server) openConsent(tok string, now time.Time) (*consentForm, bool) {
	body, sig, ok := strings.Cut(tok, ".")
	if !ok || len(tok) > maxConsentFormBytes {
		return nil, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return nil, false
	}
	mac := hmac.New(sha256.New, s.consentKey)
	mac.Write([]byte(body))
	if !hmac.Equal(got, mac.Sum(nil)) {
		return nil, false
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return nil, false
	}
	f := new(consentForm)
	if err := json.Unmarshal(b, f); err != nil || f.Nonce == "" || !now.Before(f.Expires) {
		return nil, false
	}
	return f, true
}

var consentPage = template.Must(template.New("consent").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Authorize {{.ClientName}}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:sans-serif;max-width:40em;margin:2em auto;padding:0 1em}.dev{background:#fee;border:1px solid #c00;padding:.5em}.warn{background:#ffd;border:1px solid #aa0;padding:.5em}code{word-break:break-all}</style>
</head><body>
<p class="dev"><strong>Development authorization server.</strong> For development and tests only; not for production.</p>
<h1>Authorize {{if .ClientName}}{{.ClientName}}{{else}}an unnamed client{{end}}?</h1>
<dl>
<dt>Client</dt><dd>{{if .ClientHost}}hosted at <strong>{{.ClientHost}}</strong><br>{{end}}<code>{{.ClientID}}</code></dd>
<dt>Will redirect to</dt><dd><strong>{{.RedirectHost}}</strong><br><code>{{.RedirectURI}}</code></dd>
<dt>Signed in as</dt><dd>{{.Subject}} (tenant {{.Tenant}})</dd>
<dt>Access to</dt><dd><code>{{.Resource}}</code></dd>
<dt>Scopes</dt><dd>{{range .Scopes}}<code>{{.}}</code> {{else}}none{{end}}</dd>
</dl>
{{if .Loopback}}<p class="warn">This client redirects to this computer ({{.RedirectHost}}). Any program running here could have started this request. Approve only if you started it.</p>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="request_id" value="{{.RequestID}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<button type="submit" name="action" value="approve">Approve</button>
<button type="submit" name="action" value="deny">Deny</button>
</form>
</body></html>
`))

var errorTemplate = template.Must(template.New("error").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Authorization error</title></head><body>
<p><strong>Development authorization server.</strong> For development and tests only; not for production.</p>
<h1>Authorization error</h1>
<p><code>{{.Code}}</code>: {{.Description}}</p>
<p>The request was not sent back to the application, because its redirect address could not be verified or the request could not continue.</p>
</body></html>
`))

// showConsent renders the consent page, with req sealed into the form.
func (s *Server) showConsent(w http.ResponseWriter, r *http.Request, req *authzRequest) {
	csrf := ""
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 43 && validChallenge(c.Value) {
		csrf = c.Value
	} else {
		csrf = randomToken()
		http.SetCookie(w, &http.Cookie{
			Name:     csrfCookie,
			Value:    csrf,
			Path:     s.authzURL,
			HttpOnly: true,
			Secure:   strings.HasPrefix(s.cfg.Issuer, "https://"),
			SameSite: http.SameSiteStrictMode,
		})
	}
	id, ok := s.sealConsent(&consentForm{Req: *req, CSRF: csrf, Nonce: newJTI(), Expires: s.cfg.Now().Add(consentTTL)})
	if !ok {
		s.redirectError(w, r, req.RedirectURI, req.State, errInvalidRequest("authorization request too large"))
		return
	}
	redirectHost, loopback := req.RedirectURI, false
	if u, err := url.Parse(req.RedirectURI); err == nil && u.Host != "" {
		redirectHost, loopback = u.Host, isLoopback(u.Hostname())
	}
	data := map[string]any{
		"ClientName":   req.ClientName,
		"ClientID":     req.ClientID,
		"ClientHost":   req.ClientHost,
		"RedirectURI":  req.RedirectURI,
		"RedirectHost": redirectHost,
		"Loopback":     loopback,
		"Subject":      req.Subject,
		"Tenant":       req.Tenant,
		"Resource":     req.Resource,
		"Scopes":       req.Scopes,
		"Action":       s.authzURL,
		"RequestID":    id,
		"CSRF":         csrf,
	}
	var buf bytes.Buffer
	if err := consentPage.Execute(&buf, data); err != nil {
		s.log.ErrorContext(r.Context(), "devas: consent page", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	pageHeaders(w)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// consent handles the consent form: request_id (the sealed request),
// csrf and action (approve or deny). The csrf field must equal the csrf
// cookie and the value the request was sealed with; a form is accepted
// once.
func (s *Server) consent(w http.ResponseWriter, r *http.Request) {
	p, oerr := readForm(w, r)
	if oerr != nil {
		s.errorPage(w, r, http.StatusBadRequest, oerr)
		return
	}
	id, oerr := p.require("request_id", maxConsentFormBytes)
	if oerr != nil {
		s.errorPage(w, r, http.StatusBadRequest, oerr)
		return
	}
	csrf, _ := p.get("csrf", maxParamBytes)
	action, _ := p.get("action", maxParamBytes)
	now := s.cfg.Now()
	rec, ok := s.openConsent(id, now)
	if !ok {
		s.errorPage(w, r, http.StatusBadRequest, errInvalidRequest("the consent request is unknown or expired"))
		return
	}
	cookie, err := r.Cookie(csrfCookie)
	if err != nil || csrf == "" ||
		subtle.ConstantTimeCompare([]byte(csrf), []byte(cookie.Value)) != 1 ||
		subtle.ConstantTimeCompare([]byte(csrf), []byte(rec.CSRF)) != 1 {
		s.log.WarnContext(r.Context(), "devas: authorize: consent csrf check failed")
		s.errorPage(w, r, http.StatusForbidden, &oauthError{"access_denied", "the consent form could not be verified"})
		return
	}
	if !s.spent.addEvict(hashKey(rec.Nonce), struct{}{}, rec.Expires, now) {
		s.errorPage(w, r, http.StatusBadRequest, errInvalidRequest("the consent request is unknown or expired"))
		return
	}
	switch action {
	case "approve":
		s.approve(w, r, &rec.Req)
	case "deny":
		s.redirectError(w, r, rec.Req.RedirectURI, rec.Req.State, &oauthError{"access_denied", "the user denied the request"})
	default:
		s.errorPage(w, r, http.StatusBadRequest, errInvalidRequest("unknown action"))
	}
}

// errorPage shows an error without redirecting: HTML, or JSON when the
// client asks for JSON and not HTML.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int, e *oauthError) {
	s.log.InfoContext(r.Context(), "devas: authorize: error page", "error", e.Code, "description", e.Description)
	accept := r.Header.Get("Accept")
	if strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html") {
		writeJSON(w, status, e)
		return
	}
	var buf bytes.Buffer
	_ = errorTemplate.Execute(&buf, e)
	pageHeaders(w)
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// pageHeaders sets the headers of every HTML page: no framing
// (clickjacking), no scripts, no caching, no referrer.
func pageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	noStore(w)
}

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for the types used here
		status, b = http.StatusInternalServerError, []byte(`{"error":"server_error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
