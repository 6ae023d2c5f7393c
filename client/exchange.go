package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Token type identifiers of RFC 8693 §3.
const (
	tokenTypeAccessToken  = "urn:ietf:params:oauth:token-type:access_token"
	tokenTypeRefreshToken = "urn:ietf:params:oauth:token-type:refresh_token"
	tokenTypeIDToken      = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeJWT          = "urn:ietf:params:oauth:token-type:jwt"
)

// grantTypeTokenExchange is the RFC 8693 §2.1 grant_type value.
const grantTypeTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"

// maxTokenResponseBytes caps the token response body ExchangeToken reads.
const maxTokenResponseBytes = 1 << 20

// ExchangeConfig configures [ExchangeToken] (RFC 8693 §2.1).
type ExchangeConfig struct {
	// TokenURL is the authorization server's token endpoint. Required;
	// https, or http with a loopback host.
	TokenURL string
	// ClientID and ClientSecret authenticate the MCP server with HTTP
	// Basic (RFC 6749 §2.3.1, each form-urlencoded first). If ClientSecret
	// is empty, ClientID alone is sent as the client_id parameter (a public
	// client); if both are empty, no client authentication is sent.
	ClientID, ClientSecret string
	// Resource lists RFC 8693 §2.1 "resource" values: the upstream
	// services' URIs.
	Resource []string
	// Audience lists RFC 8693 §2.1 "audience" values: logical names of the
	// upstream services.
	Audience []string
	// Scopes are the requested scopes (RFC 8693 §2.1 "scope").
	Scopes []string
	// RequestedTokenType is the RFC 8693 §2.1 "requested_token_type";
	// "" omits it (the server picks, usually an access token).
	RequestedTokenType string
	// SubjectTokenType is the type of the subject token. If "",
	// "urn:ietf:params:oauth:token-type:access_token" (RFC 8693 §3).
	SubjectTokenType string
	// Now returns the current time, to turn expires_in into
	// oauth2.Token.Expiry. If nil, time.Now.
	Now func() time.Time
}

// ExchangeToken performs an RFC 8693 token exchange at cfg.TokenURL: it
// trades subjectToken (for an MCP server, the access token it received and
// validated) for a token for the upstream services named by cfg.Resource
// or cfg.Audience. This is how an MCP server acts for the user upstream
// without passing the inbound token through (MCP §Token Passthrough): the
// inbound token goes only to the authorization server, never to the
// upstream API.
//
// It POSTs grant_type=urn:ietf:params:oauth:grant-type:token-exchange with
// subject_token, subject_token_type and the optional parameters, with one
// request, no redirects, and at most 1 MiB of response read. If c is nil a
// client with a 10 second timeout is used; c itself is not modified.
//
// A 200 response must be application/json with access_token,
// issued_token_type and token_type (RFC 8693 §2.2.1). The returned token
// has Expiry set from expires_in, and its Extra holds every member (e.g.
// Extra("issued_token_type"), Extra("scope")). An error response
// (RFC 8693 §2.2.2) or other status gives an [*Error] with the reason
// "token_exchange", its StatusCode and the response's Code, Description
// and URI; other failures wrap an Error with the reason "token_exchange"
// or "config".
func ExchangeToken(ctx context.Context, c *http.Client, cfg ExchangeConfig, subjectToken string) (*oauth2.Token, error) {
	if err := checkEndpoint("TokenURL", cfg.TokenURL); err != nil {
		return nil, err
	}
	if subjectToken == "" {
		return nil, fmt.Errorf("%w: empty subject token", errInvalidConfig)
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	form := url.Values{
		"grant_type":         {grantTypeTokenExchange},
		"subject_token":      {subjectToken},
		"subject_token_type": {tokenTypeAccessToken},
	}
	if cfg.SubjectTokenType != "" {
		form.Set("subject_token_type", cfg.SubjectTokenType)
	}
	for _, r := range cfg.Resource {
		form.Add("resource", r)
	}
	for _, a := range cfg.Audience {
		form.Add("audience", a)
	}
	if len(cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(cfg.Scopes, " "))
	}
	if cfg.RequestedTokenType != "" {
		form.Set("requested_token_type", cfg.RequestedTokenType)
	}
	if cfg.ClientID != "" && cfg.ClientSecret == "" {
		form.Set("client_id", cfg.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errTokenExchange, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if cfg.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(cfg.ClientID), url.QueryEscape(cfg.ClientSecret))
	}
	resp, err := tokenClient(c).Do(req)
	if err != nil {
		if errors.Is(err, errNoRedirect) {
			return nil, fmt.Errorf("%w: redirect refused", errTokenExchange)
		}
		return nil, fmt.Errorf("%w: %w", errTokenExchange, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errTokenExchange, err)
	}
	if len(body) > maxTokenResponseBytes {
		return nil, fmt.Errorf("%w: response exceeds %d bytes", errTokenExchange, maxTokenResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		e := &Error{Reason: errTokenExchange.Reason, StatusCode: resp.StatusCode}
		var eb struct {
			Code        string `json:"error"`
			Description string `json:"error_description"`
			URI         string `json:"error_uri"`
		}
		if strictjson.Unmarshal(body, &eb) == nil {
			e.Code, e.Description, e.URI = eb.Code, eb.Description, eb.URI
		}
		return nil, e
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, fmt.Errorf("%w: content type is not application/json", errTokenExchange)
	}
	return parseExchangeResponse(body, now())
}

// parseExchangeResponse decodes an RFC 8693 §2.2.1 success response with
// the module's strict reader (internal/strictjson: one object, valid
// UTF-8, no repeated member name, names matched exactly).
func parseExchangeResponse(body []byte, now time.Time) (*oauth2.Token, error) {
	var raw map[string]any
	if err := strictjson.Unmarshal(body, &raw); err != nil || raw == nil {
		return nil, fmt.Errorf("%w: malformed JSON response", errTokenExchange)
	}
	str := func(k string) string { s, _ := raw[k].(string); return s }
	tok := &oauth2.Token{
		AccessToken:  str("access_token"),
		TokenType:    str("token_type"),
		RefreshToken: str("refresh_token"),
	}
	for _, k := range []string{"access_token", "issued_token_type", "token_type"} {
		if str(k) == "" {
			return nil, fmt.Errorf("%w: response lacks %s", errTokenExchange, k)
		}
	}
	var secs int64
	switch v := raw["expires_in"].(type) {
	case nil:
	case float64:
		secs = int64(v)
	case string: // some servers send a string
		secs, _ = strconv.ParseInt(v, 10, 64)
	default:
		return nil, fmt.Errorf("%w: malformed expires_in", errTokenExchange)
	}
	if secs > 0 && secs < 1<<31 {
		tok.ExpiresIn = secs
		tok.Expiry = now.Add(time.Duration(secs) * time.Second)
	}
	return tok.WithExtra(raw), nil
}
