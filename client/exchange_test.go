package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

// tokenEndpoint is a loopback token endpoint that records the last form
// and Basic credentials, and answers with respond.
type tokenEndpoint struct {
	srv        *httptest.Server
	form       url.Values
	user, pass string
	basic      bool
}

func newTokenEndpoint(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) *tokenEndpoint {
	t.Helper()
	e := &tokenEndpoint{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			t.Errorf("token request: %s, Content-Type %q", r.Method, r.Header.Get("Content-Type"))
		}
		_ = r.ParseForm()
		e.form = r.PostForm
		e.user, e.pass, e.basic = r.BasicAuth()
		respond(w, r)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func jsonResponse(status int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

const exchanged = `{"access_token":"up-1","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":60,"scope":"read"}`

func TestExchangeToken(t *testing.T) {
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		respond  func(http.ResponseWriter, *http.Request)
		cfg      func(tokenURL string) ExchangeConfig
		subject  string
		wantErr  error
		wantCode string // Error.Code
		check    func(t *testing.T, e *tokenEndpoint)
	}{
		{
			name: "success", respond: jsonResponse(200, exchanged), subject: "inbound",
			cfg: func(u string) ExchangeConfig {
				return ExchangeConfig{TokenURL: u, ClientID: "mcp server", ClientSecret: "s:cret", Resource: []string{"https://api.example.com/", "https://b.example.com/"},
					Audience: []string{"api"}, Scopes: []string{"read", "write"}, RequestedTokenType: tokenTypeAccessToken, Now: func() time.Time { return now }}
			},
			check: func(t *testing.T, e *tokenEndpoint) {
				want := url.Values{
					"grant_type": {grantTypeTokenExchange}, "subject_token": {"inbound"}, "subject_token_type": {tokenTypeAccessToken},
					"resource": {"https://api.example.com/", "https://b.example.com/"}, "audience": {"api"}, "scope": {"read write"},
					"requested_token_type": {tokenTypeAccessToken},
				}
				if !reflect.DeepEqual(e.form, want) {
					t.Errorf("form = %v, want %v", e.form, want)
				}
				if !e.basic || e.user != "mcp+server" || e.pass != "s%3Acret" {
					t.Errorf("basic auth = %v %q %q, want form-urlencoded credentials", e.basic, e.user, e.pass)
				}
			},
		},
		{
			name: "public client sends client_id", respond: jsonResponse(200, exchanged), subject: "inbound",
			cfg: func(u string) ExchangeConfig {
				return ExchangeConfig{TokenURL: u, ClientID: "c", SubjectTokenType: tokenTypeJWT, Now: func() time.Time { return now }}
			},
			check: func(t *testing.T, e *tokenEndpoint) {
				if e.basic || e.form.Get("client_id") != "c" || e.form.Get("subject_token_type") != tokenTypeJWT {
					t.Errorf("basic %v, form %v", e.basic, e.form)
				}
			},
		},
		{
			name: "error response", respond: jsonResponse(400, `{"error":"invalid_target","error_description":"no such audience"}`),
			subject: "x", wantErr: errTokenExchange, wantCode: "invalid_target",
		},
		{
			name: "server error without JSON", respond: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) },
			subject: "x", wantErr: errTokenExchange,
		},
		{
			name: "not JSON", subject: "x", wantErr: errTokenExchange,
			respond: func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, exchanged) },
		},
		{
			name: "missing issued_token_type", subject: "x", wantErr: errTokenExchange,
			respond: jsonResponse(200, `{"access_token":"a","token_type":"Bearer"}`),
		},
		{
			name: "missing access_token", subject: "x", wantErr: errTokenExchange,
			respond: jsonResponse(200, `{"issued_token_type":"t","token_type":"Bearer"}`),
		},
		{
			name: "malformed JSON", subject: "x", wantErr: errTokenExchange, respond: jsonResponse(200, `[1,2`),
		},
		{
			name: "repeated access_token", subject: "x", wantErr: errTokenExchange,
			respond: jsonResponse(200, `{"access_token":"a","access_token":"b","issued_token_type":"t","token_type":"Bearer"}`),
		},
		{
			name: "invalid UTF-8", subject: "x", wantErr: errTokenExchange,
			respond: jsonResponse(200, "{\"access_token\":\"a\xff\",\"issued_token_type\":\"t\",\"token_type\":\"Bearer\"}"),
		},
		{
			name: "case variant is not the member", subject: "x", wantErr: errTokenExchange,
			respond: jsonResponse(200, `{"Access_Token":"a","issued_token_type":"t","token_type":"Bearer"}`),
		},
		{
			name: "bad expires_in", subject: "x", wantErr: errTokenExchange,
			respond: jsonResponse(200, `{"access_token":"a","issued_token_type":"t","token_type":"N_A","expires_in":{}}`),
		},
		{
			name: "too large", subject: "x", wantErr: errTokenExchange,
			respond: jsonResponse(200, `{"access_token":"`+strings.Repeat("a", maxTokenResponseBytes)+`"}`),
		},
		{
			name: "redirect refused", subject: "x", wantErr: errTokenExchange,
			respond: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
			},
		},
		{
			name: "empty subject token", respond: jsonResponse(200, exchanged), wantErr: errInvalidConfig,
		},
		{
			name: "plain http token endpoint", respond: jsonResponse(200, exchanged), subject: "x", wantErr: errInvalidConfig,
			cfg: func(string) ExchangeConfig { return ExchangeConfig{TokenURL: "http://as.example.com/token"} },
		},
		{
			name: "relative token endpoint", respond: jsonResponse(200, exchanged), subject: "x", wantErr: errInvalidConfig,
			cfg: func(string) ExchangeConfig { return ExchangeConfig{TokenURL: "/token"} },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTokenEndpoint(t, tt.respond)
			cfg := ExchangeConfig{TokenURL: e.srv.URL + "/token", Now: func() time.Time { return now }}
			if tt.cfg != nil {
				cfg = tt.cfg(e.srv.URL + "/token")
			}
			tok, err := ExchangeToken(context.Background(), nil, cfg, tt.subject)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			var ee *Error
			if errors.As(err, &ee) && ee.Code != tt.wantCode {
				t.Errorf("Error.Code = %q, want %q", ee.Code, tt.wantCode)
			}
			if err != nil {
				if strings.Contains(err.Error(), "no such audience") {
					t.Errorf("error text contains server text: %v", err)
				}
				return
			}
			if tok.AccessToken != "up-1" || tok.Type() != "Bearer" || tok.Extra("issued_token_type") != tokenTypeAccessToken ||
				tok.Extra("scope") != "read" || !tok.Expiry.Equal(now.Add(time.Minute)) || tok.ExpiresIn != 60 {
				t.Errorf("token = %+v", tok)
			}
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}

func TestUpstreamTokenSource(t *testing.T) {
	tests := []struct {
		name     string
		cfg      func(tokenURL string) UpstreamConfig
		wantErr  error
		wantForm url.Values
	}{
		{
			name: "client credentials with resource and audience",
			cfg: func(u string) UpstreamConfig {
				return UpstreamConfig{TokenURL: u, ClientID: "srv", ClientSecret: "sec", Scopes: []string{"a", "b"},
					Resource: "https://api.example.com/", Audience: "api", EndpointParams: url.Values{"x": {"1"}}}
			},
			wantForm: url.Values{"grant_type": {"client_credentials"}, "scope": {"a b"}, "resource": {"https://api.example.com/"}, "audience": {"api"}, "x": {"1"}},
		},
		{
			name: "resource twice", wantErr: errInvalidConfig,
			cfg: func(u string) UpstreamConfig {
				return UpstreamConfig{TokenURL: u, ClientID: "srv", Resource: "https://a/", EndpointParams: url.Values{"resource": {"https://b/"}}}
			},
		},
		{
			name: "no client id", wantErr: errInvalidConfig,
			cfg: func(u string) UpstreamConfig { return UpstreamConfig{TokenURL: u} },
		},
		{
			name: "plain http", wantErr: errInvalidConfig,
			cfg: func(string) UpstreamConfig { return UpstreamConfig{TokenURL: "http://as.example.com/t", ClientID: "c"} },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTokenEndpoint(t, jsonResponse(200, `{"access_token":"cc-1","token_type":"Bearer","expires_in":3600}`))
			src := UpstreamTokenSource(context.Background(), tt.cfg(e.srv.URL+"/token"))
			tok, err := src.Token()
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if tok.AccessToken != "cc-1" || !reflect.DeepEqual(e.form, tt.wantForm) || e.user != "srv" || e.pass != "sec" {
				t.Errorf("token %q, form %v (want %v), basic %q:%q", tok.AccessToken, e.form, tt.wantForm, e.user, e.pass)
			}
		})
	}
}
