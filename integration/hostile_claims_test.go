package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/examples/mcpserver/server"
	"github.com/mcpguard/mcpguard/validate"
)

// hxTimeCases are the time-claim cases (RFC 7519 §4.1.4-4.1.6) with the default
// leeway.
func hxTimeCases(fx *hxHostile) []hxCase {
	e, ctx := fx.e, fx.ctx
	bearer, tokReq, now := fx.bearer, fx.tokReq, fx.now
	ok, invalid := fx.ok, fx.invalid
	leeway := int64(30) // validate's default leeway, in seconds
	return []hxCase{
		{class: "time", name: "exp_now_minus_leeway_minus_1s", want: invalid, wantErr: validate.Error{Reason: "expired"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"exp": now() - leeway - 1}}))
			}},
		{class: "time", name: "exp_now_minus_leeway", want: invalid, wantErr: validate.Error{Reason: "expired"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"exp": now() - leeway}}))
			}},
		{class: "time", name: "exp_now_minus_leeway_plus_1s", want: ok,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"exp": now() - leeway + 1}}))
			}},
		{class: "time", name: "nbf_now_plus_leeway_plus_1s", want: invalid, wantErr: validate.Error{Reason: "not_yet_valid"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"nbf": now() + leeway + 1}}))
			}},
		{class: "time", name: "nbf_now_plus_leeway", want: ok,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"nbf": now() + leeway}}))
			}},
		{class: "time", name: "iat_now_plus_leeway_plus_1s", want: invalid, wantErr: validate.Error{Reason: "issued_at"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"iat": now() + leeway + 1}}))
			}},
		{class: "time", name: "iat_now_plus_leeway", want: ok,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"iat": now() + leeway}}))
			}},
		// A verified token is cached; the cache re-checks exp on every hit.
		{class: "time", name: "cached_token_expires", want: invalid, wantErr: validate.Error{Reason: "expired"},
			req: func(t *testing.T) hxReq {
				tok := e.tok(t, authtest.Token{Claims: map[string]any{"exp": now() + 60}})
				if r := e.whoami(ctx, t, tok); r.status != http.StatusOK {
					t.Fatalf("first use: status %d", r.status)
				}
				e.iss.Advance(60*time.Second + 30*time.Second)
				return bearer(tok)
			}},
		{class: "time", name: "exp_missing", want: invalid, wantErr: validate.Error{Reason: "missing_claim"}, req: tokReq(authtest.Token{Claims: map[string]any{"exp": nil}})},
		{class: "time", name: "iat_missing", want: invalid, wantErr: validate.Error{Reason: "missing_claim"}, req: tokReq(authtest.Token{Claims: map[string]any{"iat": nil}})},
		{class: "time", name: "exp_string", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"exp": strconv.FormatInt(now()+3600, 10)}}))
			}},
		{class: "time", name: "exp_null", want: invalid, wantErr: validate.Error{Reason: "malformed"}, req: tokReq(authtest.Token{Claims: map[string]any{"exp": json.RawMessage("null")}})},
		{class: "time", name: "exp_true", want: invalid, wantErr: validate.Error{Reason: "malformed"}, req: tokReq(authtest.Token{Claims: map[string]any{"exp": true}})},
		{class: "time", name: "exp_1e300", want: invalid, wantErr: validate.Error{Reason: "malformed"}, req: tokReq(authtest.Token{Claims: map[string]any{"exp": json.Number("1e300")}})},
		{class: "time", name: "exp_negative", want: invalid, wantErr: validate.Error{Reason: "malformed"}, req: tokReq(authtest.Token{Claims: map[string]any{"exp": -1}})},
		{class: "time", name: "exp_float_with_fraction", want: ok,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"exp": json.Number(fmt.Sprintf("%d.5", now()+3600))}}))
			}},
		{class: "time", name: "exp_int_above_2_pow_63", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: tokReq(authtest.Token{Claims: map[string]any{"exp": json.Number("9223372036854775808000")}})},
		{class: "time", name: "exp_2_pow_63", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: tokReq(authtest.Token{Claims: map[string]any{"exp": json.Number("9223372036854775808")}})},
		{class: "time", name: "nbf_string", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"nbf": strconv.FormatInt(now(), 10)}}))
			}},
	}
}

// hxIssuerAudienceCases are the issuer and audience cases: exact string
// comparison (RFC 9068 §4, RFC 8707 §2, RFC 7519 §4.1.3 "case-sensitive
// strings").
func hxIssuerAudienceCases(fx *hxHostile) []hxCase {
	e, es := fx.e, fx.es
	hdr, signed, bearer, tokReq, expired := fx.hdr, fx.signed, fx.bearer, fx.tokReq, fx.expired
	ok, invalid, noTok := fx.ok, fx.invalid, fx.noTok
	hostRefused := e.wantProxyHostRefused()
	return []hxCase{
		{class: "issuer_audience", name: "iss_scheme_uppercase", want: invalid, wantErr: validate.Error{Reason: "issuer"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"iss": "HTTP" + strings.TrimPrefix(e.iss.URL, "http")}}))
			}},
		{class: "issuer_audience", name: "iss_host_alias_LOCALHOST", want: invalid, wantErr: validate.Error{Reason: "issuer"},
			req: func(t *testing.T) hxReq {
				_, port, _ := strings.Cut(strings.TrimPrefix(e.iss.URL, "http://"), ":")
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"iss": "http://LOCALHOST:" + port}}))
			}},
		{class: "issuer_audience", name: "iss_trailing_slash", want: invalid, wantErr: validate.Error{Reason: "issuer"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"iss": e.iss.URL + "/"}}))
			}},
		{class: "issuer_audience", name: "iss_prefix_trick", want: invalid, wantErr: validate.Error{Reason: "issuer"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"iss": e.iss.URL + ".evil"}}))
			}},
		{class: "issuer_audience", name: "iss_userinfo_trick", want: invalid, wantErr: validate.Error{Reason: "issuer"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"iss": e.iss.URL + "@evil.example"}}))
			}},
		// JSON strings compare after unescaping (RFC 8259 §8.3): an
		// escaped solidus is the same issuer and audience.
		{class: "issuer_audience", name: "iss_and_aud_json_escaped_solidus", want: ok,
			req: func(t *testing.T) hxReq {
				b := hxJSON(t, e.claims())
				b = bytes.Replace(b, []byte(`"iss":"http://`), []byte(`"iss":"http:\/\/`), 1)
				b = bytes.Replace(b, []byte(`"aud":"http://`), []byte(`"aud":"http:\/\/`), 1)
				return bearer(signed(t, es, "ES256", hdr(nil), b))
			}},
		{class: "issuer_audience", name: "iss_array", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Claims: map[string]any{"iss": []string{e.iss.URL}}}))
			}},
		{class: "issuer_audience", name: "iss_missing", want: invalid, wantErr: validate.Error{Reason: "missing_claim"}, req: tokReq(authtest.Token{Claims: map[string]any{"iss": nil}})},
		{class: "issuer_audience", name: "iss_other_issuer", want: invalid, wantErr: validate.Error{Reason: "issuer"}, req: tokReq(authtest.WrongIssuer())},
		// MCP Canonical Server URI: uppercase scheme and host SHOULD be
		// accepted; the path is case-sensitive.
		{class: "issuer_audience", name: "aud_uppercase_scheme_host", want: ok,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Audience: []string{upperSchemeHost(e.mcpURL)}}))
			}},
		{class: "issuer_audience", name: "aud_uppercase", want: invalid, wantErr: validate.Error{Reason: "audience"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Audience: []string{strings.ToUpper(e.mcpURL)}}))
			}},
		{class: "issuer_audience", name: "aud_trailing_slash", want: invalid, wantErr: validate.Error{Reason: "audience"},
			req: func(t *testing.T) hxReq { return bearer(e.tok(t, authtest.Token{Audience: []string{e.mcpURL + "/"}})) }},
		{class: "issuer_audience", name: "aud_prefix_of_ours", want: invalid, wantErr: validate.Error{Reason: "audience"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Audience: []string{strings.TrimSuffix(e.mcpURL, "/mcp")}}))
			}},
		{class: "issuer_audience", name: "aud_ours_as_prefix", want: invalid, wantErr: validate.Error{Reason: "audience"},
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Audience: []string{e.mcpURL + "-evil"}}))
			}},
		{class: "issuer_audience", name: "aud_array_ours_and_others", want: ok,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Audience: []string{authtest.WrongAudience().Audience[0], e.mcpURL, "https://third.example"}}))
			}},
		{class: "issuer_audience", name: "aud_array_others_only", want: invalid, wantErr: validate.Error{Reason: "audience"},
			req: tokReq(authtest.Token{Audience: []string{authtest.WrongAudience().Audience[0], "https://third.example"}})},
		{class: "issuer_audience", name: "aud_empty_array", want: invalid, wantErr: validate.Error{Reason: "missing_claim"}, req: tokReq(authtest.Token{Audience: []string{}})},
		{class: "issuer_audience", name: "aud_missing", want: invalid, wantErr: validate.Error{Reason: "missing_claim"}, req: tokReq(authtest.Token{Claims: map[string]any{"aud": nil}})},
		{class: "issuer_audience", name: "aud_not_a_string", want: invalid, wantErr: validate.Error{Reason: "malformed"}, req: tokReq(authtest.Token{Claims: map[string]any{"aud": 1}})},
		{class: "issuer_audience", name: "x_forwarded_host_proto_spoofed", want: invalid, wantErr: validate.Error{Reason: "expired"},
			req: func(t *testing.T) hxReq {
				return hxReq{authz: hxBearer(expired(t)), header: map[string]string{
					"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https",
					"Forwarded": "host=evil.example;proto=https", "X-Forwarded-Prefix": "/evil",
				}}
			}},
		// A foreign Host on a loopback listener (DNS rebinding). The
		// library answers the token first, and a valid token then meets
		// the go-sdk's Host check, which names the Host in its plain-text
		// 403. mcpguard proxy checks the Host first, as the go-sdk does
		// in front of everything (docs/proxy.md, "DNS rebinding: the Host
		// check"): the same 403 for every token, in the proxy's JSON-RPC
		// shape, nothing of the Host in it, nothing to the upstream. Either
		// way the tool does not run.
		{class: "issuer_audience", name: "host_spoofed_invalid_token", want: invalid, wantErr: validate.Error{Reason: "expired"},
			proxied: &hostRefused,
			req:     func(t *testing.T) hxReq { return hxReq{authz: hxBearer(expired(t)), host: "evil.example"} }},
		{class: "issuer_audience", name: "host_spoofed_no_token", want: noTok,
			proxied: &hostRefused,
			req:     func(t *testing.T) hxReq { return hxReq{host: "evil.example:443"} }},
		{class: "issuer_audience", name: "host_spoofed_valid_token",
			want:    hxWant{status: http.StatusForbidden, body: "Forbidden: invalid Host header \"evil.example\"\n", notMiddleware: true},
			proxied: &hostRefused,
			req:     func(t *testing.T) hxReq { return hxReq{authz: hxBearer(e.tok(t)), host: "evil.example"} }},
		// A loopback name other than the resource's host passes both.
		{class: "issuer_audience", name: "host_localhost_valid_token", want: ok,
			req: func(t *testing.T) hxReq { return hxReq{authz: hxBearer(e.tok(t)), host: "localhost"} }},
	}
}

// hxScopeCases are the scope-format cases (RFC 9068 §2.2.3, RFC 8693 §4.2, RFC 6749
// §3.3). A token lacking scopes is an insufficient_scope 403 only when its
// "scope" is well-formed; each 403 case has its own subject, so the
// step-up bound (3 per principal) never applies. A token without the base
// scope is refused before its body is read (issue 22 item 3): its 403
// lists the base scope only.
func hxScopeCases(fx *hxHostile) []hxCase {
	e := fx.e
	bearer, tokReq, uniqueSub := fx.bearer, fx.tokReq, fx.uniqueSub
	ok, invalid, insufficient := fx.ok, fx.invalid, fx.insufficient
	noBase := e.wantInsufficient(hxBaseScope)
	return []hxCase{
		{class: "scope", name: "scope_array", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: tokReq(authtest.Token{Claims: map[string]any{"scope": []string{hxBaseScope, server.ScopeNotesWrite}}})},
		{class: "scope", name: "scope_tab_separated", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: tokReq(authtest.Token{Claims: map[string]any{"scope": hxBaseScope + "\t" + server.ScopeNotesWrite}})},
		{class: "scope", name: "scope_newline_separated", want: invalid, wantErr: validate.Error{Reason: "malformed"},
			req: tokReq(authtest.Token{Claims: map[string]any{"scope": hxBaseScope + "\n" + server.ScopeNotesWrite}})},
		{class: "scope", name: "scope_not_a_string", want: invalid, wantErr: validate.Error{Reason: "malformed"}, req: tokReq(authtest.Token{Claims: map[string]any{"scope": 7}})},
		{class: "scope", name: "scope_comma_separated", want: noBase,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Subject: uniqueSub(t), Claims: map[string]any{"scope": hxBaseScope + "," + server.ScopeNotesWrite}}))
			}},
		{class: "scope", name: "scp_array_not_allowed", want: noBase,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Subject: uniqueSub(t), Claims: map[string]any{"scope": nil, "scp": []string{hxBaseScope, server.ScopeNotesWrite}}}))
			}},
		{class: "scope", name: "scp_string_not_allowed", want: noBase,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Subject: uniqueSub(t), Claims: map[string]any{"scope": nil, "scp": hxBaseScope + " " + server.ScopeNotesWrite}}))
			}},
		{class: "scope", name: "scope_empty", want: noBase,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Subject: uniqueSub(t), Claims: map[string]any{"scope": ""}}))
			}},
		{class: "scope", name: "scope_missing", want: noBase,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Subject: uniqueSub(t), Claims: map[string]any{"scope": nil}}))
			}},
		{class: "scope", name: "scope_lacking_base", want: noBase,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Subject: uniqueSub(t), Scopes: []string{server.ScopeNotesWrite}}))
			}},
		{class: "scope", name: "scope_lacking_tool_scope", want: insufficient,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Subject: uniqueSub(t), Scopes: []string{hxBaseScope}}))
			}},
		{class: "scope", name: "scope_uppercase", want: noBase,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Subject: uniqueSub(t), Scopes: []string{strings.ToUpper(hxBaseScope), strings.ToUpper(server.ScopeNotesWrite)}}))
			}},
		{class: "scope", name: "scope_prefix_of_required", want: noBase,
			req: func(t *testing.T) hxReq {
				return bearer(e.tok(t, authtest.Token{Subject: uniqueSub(t), Scopes: []string{"mcp:tool", "notes:writ"}}))
			}},
		{class: "scope", name: "scope_runs_of_spaces", want: ok,
			req: tokReq(authtest.Token{Claims: map[string]any{"scope": "  " + hxBaseScope + "   " + server.ScopeNotesWrite + " "}})},
	}
}

// upperSchemeHost upper-cases the scheme and authority of an absolute URL.
func upperSchemeHost(u string) string {
	i := strings.Index(u, "://") + 3
	j := strings.IndexByte(u[i:], '/')
	return strings.ToUpper(u[:i+j]) + u[i+j:]
}
