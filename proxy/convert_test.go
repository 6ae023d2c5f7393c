package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/validate/dpop"
	"github.com/mcpguard/mcpguard/validate/introspect"
	"github.com/mcpguard/mcpguard/validate/jwks"
)

// zeroPaths appends to out the path of every field of v, walked into
// structs and into the first element of slices of structs, that is zero,
// skipping the paths (and the subtrees) in skip.
func zeroPaths(v reflect.Value, path string, skip map[string]string, out *[]string) {
	if _, ok := skip[path]; ok && path != "" {
		return
	}
	switch {
	case v.Kind() == reflect.Struct && v.Type() != reflect.TypeFor[time.Time]():
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			zeroPaths(v.Field(i), join(path, f.Name), skip, out)
		}
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct && v.Len() > 0:
		zeroPaths(v.Index(0), path+"[0]", skip, out)
	case v.IsZero():
		*out = append(*out, path)
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// allCarried fails t when a field of the converted value out is zero
// without being in unset (a field the converter forgot), or is in unset
// but set (a stale entry). in is the YAML section(s) converted: the test
// must set every field of them, but those in notRead.
func allCarried(t *testing.T, name string, in []any, notRead map[string]string, out any, unset map[string]string) {
	t.Helper()
	for _, v := range in {
		var zero []string
		zeroPaths(reflect.ValueOf(v), "", notRead, &zero)
		if len(zero) > 0 {
			t.Fatalf("%s: the test leaves %T fields %q zero", name, v, zero)
		}
	}
	var zero []string
	zeroPaths(reflect.ValueOf(out), "", unset, &zero)
	for _, p := range zero {
		t.Errorf("%s: %T.%s is not set by the converter and not listed as intentionally unset", name, out, p)
	}
	for p := range unset {
		var z []string
		zeroPaths(reflect.ValueOf(out), "", nil, &z)
		if !slices.ContainsFunc(z, func(s string) bool { return s == p || len(s) > len(p) && s[:len(p)+1] == p+"." }) {
			t.Errorf("%s: %T.%s is listed as unset but the converter sets it", name, out, p)
		}
	}
}

type (
	stubKeysObserver struct{ jwks.RefreshObserver }
	stubCallObserver struct{ introspect.CallObserver }
)

// fullRoute is a route with every field the converters read set to a
// value other than its zero.
func fullRoute(t *testing.T) (*Proxy, *Route) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Unix(1_800_000_000, 0) }
	iss := "https://as.example.com"
	px := &Proxy{log: slog.New(slog.DiscardHandler), now: now, cfg: Config{
		Issuers: map[string]Issuer{iss: {
			JWKSURL: iss + "/jwks", RefreshInterval: time.Minute, OpaqueOnly: true,
			Introspection: Introspection{
				Endpoint: iss + "/introspect", ClientID: "proxy", AuthMethod: "private_key_jwt",
				ClientSecretEnv: "X", ClientSecretFile: "/x", PrivateKeyFile: "/k.pem", KeyID: "k1",
				Timeout: time.Second, CacheSize: 9, MaxCacheTTL: time.Minute, InactiveCacheTTL: time.Second,
				AllowMissingAudience: true, AllowMissingSubject: true, ClientSecret: "s", PrivateKey: key,
			},
		}},
		Now:                   now,
		StepUpStore:           middleware.NewMemoryStepUpStore(),
		OwnerStore:            middleware.NewMemoryOwnerStore(now),
		PinStore:              middleware.NewMemoryPinStore(),
		ReplayStore:           dpop.NewMemoryReplayStore(10, now),
		KeysObserver:          stubKeysObserver{},
		IntrospectionObserver: stubCallObserver{},
	}}
	r := &Route{
		Resource: "https://mcp.example.com/mcp", Upstream: "http://127.0.0.1:3000/mcp", Issuers: []string{iss},
		Scopes: []string{"mcp"},
		Operations: Operations{
			Methods: map[string][]string{"tools/list": {"m"}}, Tools: map[string][]string{"t": {"a"}},
			Prompts: map[string][]string{"p": {"b"}}, Resources: []ResourceRule{{URI: "file:///b/", Prefix: true, Scopes: []string{"r"}}},
			DenyUnlisted: true,
			Public:       PublicOperations{Methods: []string{"ping"}, Tools: []string{"pt"}, Prompts: []string{"pp"}, Resources: []string{"file:///pub"}},
		},
		Policy: Policy{Rules: []PolicyRule{{
			Name: "r", Methods: []string{"tools/call"}, Tools: []string{"t*"}, Prompts: []string{"p*"}, Resources: []string{"file:///"},
			DenyWhen: "false", RequireScopes: []string{"admin"}, When: "true",
		}}, TenantArgument: "tenant"},
		Pins: Pins{Tools: true, Accepted: map[string]string{"t": "00"}},
		DPoP: "required",
		DPoPProof: DPoPProof{Algorithms: []string{"ES256"}, Window: time.Minute, ReplayMargin: time.Second,
			NonceSecretEnv: "N", NonceSecretFile: "/n", NonceLifetime: time.Minute, NonceSecret: make([]byte, 32)},
		ScopeImplies:   map[string][]string{"admin": {"mcp"}},
		AllowedOrigins: []string{"https://app.example.com"},
		Validation: Validation{
			Audiences: []string{"https://alt.example.com/mcp"}, Leeway: time.Second, TenantClaim: "tid",
			AllowJWTType: true, AllowSCP: true, AllowMissingJTI: true, AllowMissingClientID: true,
			AllowedClients: []string{"c"}, AllowMissingIssuedAt: true, AllowMissingSubject: true,
			RejectMultipleAudiences: true, Algorithms: []string{"ES256"}, MaxTokenLifetime: time.Hour,
			MaxTokenBytes: 4096, RequireKID: true, CacheSize: 7, MaxKeyWait: time.Minute,
		},
		StepUp:       StepUp{Limit: 2, Window: time.Minute},
		MaxBodyBytes: 1 << 20,
		ResourceName: "Example",
		Lists:        "hide",
		Sessions:     Sessions{Max: 5, PerPrincipal: 2, IdleTimeout: time.Minute, BindClient: true},
		Identity: Identity{Mode: "exchange", Audience: "https://upstream.example.com", Header: "X-Token", TTL: time.Minute,
			Exchange: Exchange{TokenEndpoint: iss + "/token", ClientID: "proxy", ClientSecretEnv: "E", ClientSecretFile: "/e",
				Scopes: []string{"up"}, ClientSecret: "s"}},
		MaxStreamsPerUser: 3,
		RateLimit:         RateLimit{Principal: "10/s", Tools: map[string]string{"t": "1/s"}, FailClosed: true},
		ForwardHeaders:    []string{"X-Trace"},
		Stdio: Stdio{Command: []string{"server"}, Env: map[string]string{"A": "b"}, PassEnv: []string{"HOME"}, Dir: "/tmp",
			MaxChildren: 3, MaxPerUser: 2, StartTimeout: time.Second, IdleTimeout: time.Minute, StopGrace: time.Second,
			RequestTimeout: time.Minute, MaxMessageBytes: 1024, MaxQueued: 4, ResumeWindow: 2 * time.Minute, PerUser: true, ForwardRoots: true, PIDNamespace: true},
	}
	return px, r
}

// TestGuardConfigCarriesEveryField: guardConfig, the conversion of a
// route's YAML sections (operations, policy and its rules, pins, dpop and
// dpop_proof, scope_implies, allowed_origins, validation, step_up,
// max_body_bytes, resource_name, lists, sessions) into mcpguard.Config
// and the middleware's and validator's own types, sets every field of
// them but those listed here with the reason they are not the file's.
// A field added to middleware.Config (or dpop.Config, SessionConfig, …)
// fails this test until the proxy carries it or lists it.
func TestGuardConfigCarriesEveryField(t *testing.T) {
	px, r := fullRoute(t)
	gc, err := px.guardConfig(r, nil, px.log)
	if err != nil {
		t.Fatal(err)
	}
	in := []any{r.Operations, r.Policy, r.Pins, r.DPoPProof, r.Validation, r.StepUp, r.Sessions}
	notRead := map[string]string{
		"NonceSecretEnv":  "read into NonceSecret when the file is loaded (load.go)",
		"NonceSecretFile": "read into NonceSecret when the file is loaded (load.go)",
	}
	unset := map[string]string{
		"JWKS":                          "the proxy builds its key sources itself (Keys), shared between routes",
		"WaitForKeys":                   "the proxy serves 503 until keys arrive and reports readiness itself",
		"Metadata.Resource":             "mcpguard fills it from Resource",
		"Metadata.AuthorizationServers": "mcpguard fills it from Issuers",
		"Metadata.ScopesSupported":      "mcpguard fills it from Scopes and Operations",
		"Metadata.JWKSURI":              "not offered: the proxy signs no resource metadata",
		"Metadata.ResourceSigningAlgValuesSupported":     "not offered: the proxy signs no resource metadata",
		"Metadata.SignedMetadata":                        "not offered: the proxy signs no resource metadata",
		"Metadata.TLSClientCertificateBoundAccessTokens": "not offered: the proxy takes no mTLS-bound tokens",
		"Metadata.AuthorizationDetailsTypesSupported":    "not offered: the proxy reads no authorization_details",
		"Metadata.ResourceDocumentation":                 "not offered by the file",
		"Metadata.ResourcePolicyURI":                     "not offered by the file",
		"Metadata.ResourceTOSURI":                        "not offered by the file",
		"Metadata.DPoPSigningAlgValuesSupported":         "the middleware fills it from DPoP.Proof.Algorithms",
		"Metadata.DPoPBoundAccessTokensRequired":         "the middleware fills it from DPoP.Policy",
		"Validate.Issuers":                               "mcpguard fills it from Issuers and Keys",
		"Validate.AllowConfirmation":                     "mcpguard sets it when DPoP is not off",
		"Validate.AllowMissingKID":                       "deprecated and ignored (RequireKID is the file's require_kid)",
		"Validate.Observer":                              "Config.Instrument (otelguard) sets it",
		"Middleware.Validator":                           "mcpguard fills it from the validator",
		"Middleware.Metadata":                            "mcpguard fills it from Metadata",
		"Middleware.Scopes":                              "mcpguard fills it from Scopes",
		"Middleware.Operations":                          "mcpguard fills it from Operations",
		"Middleware.LegacyScopes":                        "not offered by the file: the default union strategy for pre-2026-07-28 clients",
		"Middleware.Realm":                               "not offered by the file: challenges carry no realm",
		"Middleware.RetryAfter":                          "not offered by the file: the default 30s while keys are unavailable",
		"Middleware.RefusalLogRate":                      "the proxy logs every decision itself (log.go); the middleware's logger keeps warnings only",
		"Middleware.OnDecision":                          "the proxy reads decisions from the request context (middleware.ContextWithDecision)",
		"Middleware.Sessions.Anonymous":                  "not offered by the file: the default quota of the anonymous principal",
		"Middleware.Sessions.PassUnknown":                "the proxy's upstream sessions are created through the proxy only",
		"Middleware.DPoP.Proof.MaxProofBytes":            "not offered by the file: the default 8 KiB",
		"Middleware.DPoP.Proof.Now":                      "the middleware gives its Now to the verifier",
	}
	allCarried(t, "guardConfig", in, notRead, gc, unset)
}

// sameNames fails t when a field of in and the field of out with the same
// name and type differ: a converter that set a field from the wrong one.
func sameNames(t *testing.T, in, out any) {
	t.Helper()
	iv, ov := reflect.ValueOf(in), reflect.ValueOf(out)
	n := 0
	for i := range iv.NumField() {
		f := iv.Type().Field(i)
		o := ov.FieldByName(f.Name)
		if !o.IsValid() || o.Type() != f.Type {
			continue
		}
		n++
		if !reflect.DeepEqual(iv.Field(i).Interface(), o.Interface()) {
			t.Errorf("%T.%s = %v, want %T.%s %v", out, f.Name, o.Interface(), in, f.Name, iv.Field(i).Interface())
		}
	}
	if n == 0 {
		t.Errorf("%T and %T share no field", in, out)
	}
}

// TestGuardConfigSameNames: the sections guardConfig converts field by
// field give each field to the target field of the same name.
func TestGuardConfigSameNames(t *testing.T) {
	px, r := fullRoute(t)
	gc, err := px.guardConfig(r, nil, px.log)
	if err != nil {
		t.Fatal(err)
	}
	sameNames(t, r.Sessions, gc.Middleware.Sessions)
	sameNames(t, r.DPoPProof, gc.Middleware.DPoP.Proof)
	sameNames(t, r.Policy.Rules[0], gc.Middleware.Rules[0])
	sameNames(t, r.Pins, middleware.ToolPins{Accepted: gc.Middleware.Pins.Accepted}) // Tools is On
	if !gc.Middleware.Pins.On || gc.Middleware.StepUpLimit != r.StepUp.Limit || gc.Middleware.StepUpWindow != r.StepUp.Window ||
		gc.Middleware.DPoP.Policy != middleware.DPoPRequired || gc.Middleware.TenantArgument != r.Policy.TenantArgument ||
		gc.Middleware.Lists != middleware.ListHide || gc.Middleware.MaxBodyBytes != r.MaxBodyBytes ||
		gc.Metadata.ResourceName != r.ResourceName {
		t.Errorf("pins %+v, step-up %d %v, dpop %v, tenant argument %q, lists %v, body %d, name %q",
			gc.Middleware.Pins, gc.Middleware.StepUpLimit, gc.Middleware.StepUpWindow, gc.Middleware.DPoP.Policy,
			gc.Middleware.TenantArgument, gc.Middleware.Lists, gc.Middleware.MaxBodyBytes, gc.Metadata.ResourceName)
	}
}

// TestIssuerConfigsCarryEveryField: jwksConfig (an issuer's jwks_url and
// refresh_interval) and introspectConfig (its introspection) set every
// field of jwks.Config and introspect.Config but those listed with the
// reason they are not the file's.
func TestIssuerConfigsCarryEveryField(t *testing.T) {
	px, r := fullRoute(t)
	iss := r.Issuers[0]
	is := px.cfg.Issuers[iss]
	jc := px.jwksConfig(iss, is)
	allCarried(t, "jwksConfig", []any{Issuer{JWKSURL: is.JWKSURL, RefreshInterval: is.RefreshInterval, OpaqueOnly: true, Introspection: is.Introspection}},
		map[string]string{}, jc, map[string]string{
			"HTTPClient":       "jwks's own client (internal/fetch: bounded, no environment proxies)",
			"RefreshRateLimit": "not offered by the file: jwks's default",
			"DeferredWaiters":  "not offered by the file: jwks's default",
			"WaitTimeout":      "not offered by the file: jwks's default (validation.max_key_wait bounds a request's wait)",
			"FetchTimeout":     "not offered by the file: jwks's default",
			"MaxBytes":         "not offered by the file: jwks's default",
			"Storage":          "for Go callers that export the key set; the proxy keeps none",
		})
	sameNames(t, is, jc)

	ic, err := px.introspectConfig(r, iss, is.Introspection, true)
	if err != nil {
		t.Fatal(err)
	}
	allCarried(t, "introspectConfig", []any{is.Introspection}, map[string]string{}, ic, map[string]string{
		"Algorithm":   "follows from the key (private_key_file)",
		"TokenSource": "for Go callers of introspect; the file names a client secret or key",
		"HTTPClient":  "introspect's own client (internal/fetch)",
		"MaxBytes":    "not offered by the file: introspect's default",
	})
	in := is.Introspection
	in.AuthMethod = "private_key_jwt" // authMethod's spelling
	sameNames(t, in, ic)
	if !slices.Equal(ic.Audiences, []string{r.Resource, r.Validation.Audiences[0]}) || ic.MaxTokenBytes != r.Validation.MaxTokenBytes ||
		ic.Leeway != r.Validation.Leeway || ic.TenantClaim != r.Validation.TenantClaim || !ic.AllowConfirmation {
		t.Errorf("introspect.Config from the route: %+v", ic)
	}
}

// TestBridgeConfigCarriesEveryField: bridgeConfig sets every field of
// stdiobridge.Config from the route's stdio section.
func TestBridgeConfigCarriesEveryField(t *testing.T) {
	px, r := fullRoute(t)
	x := &route{cfg: *r, log: px.log}
	bc := x.bridgeConfig()
	allCarried(t, "bridgeConfig", []any{r.Stdio}, map[string]string{}, bc, map[string]string{
		"LookupEnv": "the process environment (os.LookupEnv), the bridge's default",
	})
	sameNames(t, r.Stdio, bc)
}

// TestFileCarriesEveryField: every field of a route and an issuer, set to
// a value other than its zero, survives the file: written as YAML and read
// back by Parse, it is what it was, but the fields Go callers set
// (yaml:"-"), which Parse fills from the *_env secrets.
func TestFileCarriesEveryField(t *testing.T) {
	px, r := fullRoute(t)
	var zero []string
	zeroPaths(reflect.ValueOf(*r), "", nil, &zero)
	if len(zero) > 0 {
		t.Fatalf("the test leaves Route fields %q zero", zero)
	}
	const env = "0123456789abcdef0123456789abcdef"
	in := Config{Routes: []Route{*r}, Issuers: px.cfg.Issuers}
	// One source per secret (env, not file); no Go-only field in the file.
	rt := &in.Routes[0]
	rt.DPoPProof.NonceSecretFile, rt.DPoPProof.NonceSecret = "", nil
	rt.Identity.Exchange.ClientSecretFile, rt.Identity.Exchange.ClientSecret = "", ""
	iss := r.Issuers[0]
	is := in.Issuers[iss]
	is.Introspection.ClientSecretFile, is.Introspection.ClientSecret, is.Introspection.PrivateKey = "", "", nil
	in.Issuers = map[string]Issuer{iss: is}
	data, err := yaml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse("every.yaml", data, func(string) string { return env })
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	rt.DPoPProof.NonceSecret, rt.Identity.Exchange.ClientSecret, is.Introspection.ClientSecret = []byte(env), env, env
	if len(got.Routes) != 1 || !reflect.DeepEqual(got.Routes[0], *rt) {
		t.Errorf("route read back:\n%+v\nwant\n%+v", got.Routes, *rt)
	}
	if !reflect.DeepEqual(got.Issuers[iss], is) {
		t.Errorf("issuer read back:\n%+v\nwant\n%+v", got.Issuers[iss], is)
	}
}
