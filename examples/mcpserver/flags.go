package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/middleware"
)

// envPrefix starts the environment variable that may set each flag:
// -dev-as-addr is also read from MCPGUARD_DEV_AS_ADDR.
const envPrefix = "MCPGUARD_"

// defaultWaitKeys is the default of -wait-keys (ops: fail-fast start-up).
const defaultWaitKeys = 10 * time.Second

// options are the parsed command-line flags.
type options struct {
	addr                 string
	resource             string
	issuer               string
	devASAddr            string
	scopes               []string
	audiences            []string
	tenantClaim          string
	leeway               time.Duration
	allowJWTType         bool
	allowSCP             bool
	allowMissingJTI      bool
	allowMissingClientID bool
	logLevel             slog.Level
	devAutoApprove       bool

	// Token validation mode and RFC 7662 introspection (introspect.go).
	tokenMode                 tokenMode
	introspectionEndpoint     string
	introspectionClientID     string
	introspectionClientSecret string

	// Key refresh (validate/jwks) and introspection relaxations; see
	// docs/keys.md.
	jwksURL                           string
	jwksRefreshInterval               time.Duration
	jwksRefreshRateLimit              time.Duration
	jwksWaitTimeout                   time.Duration
	introspectionAllowMissingAudience bool
	introspectionAllowMissingSubject  bool

	// Operations: readiness and fail-fast start-up (ops).
	waitKeys time.Duration
	// DPoP (RFC 9449): -dpop off|allowed|required (dpop.go).
	dpop middleware.DPoPPolicy
	// Session mode of the go-sdk handler (principal binding, gosdk adapter).
	stateful bool
	// What list answers show (middleware.Config.Lists).
	lists middleware.ListMode

	// CIMD development mode (cimddev.go): the embedded authorization
	// server resolves Client ID Metadata Documents served on loopback.
	devInsecureCIMDLoopback bool
	devCIMDRootCA           string

	// Browser clients (MCP Inspector connecting directly, web apps).
	allowedOrigins []string

	// Enterprise flows (enterprise.go): a development IdP trusted by the
	// embedded authorization server.
	devIdPAddr          string
	devXAASecret        string
	devWorkloadSubjects []string
}

// listFlag is a flag.Value holding scope-like tokens separated by spaces
// or commas. An empty value means an empty list.
type listFlag struct{ list *[]string }

func (f listFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, " ")
}

func (f listFlag) Set(s string) error {
	*f.list = splitList(s)
	return nil
}

// splitList splits s on spaces and commas, dropping empty elements and
// duplicates, keeping the first occurrence's order.
func splitList(s string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, v := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// levelFlag is a flag.Value for a slog.Level ("debug", "info", "warn",
// "error", or an offset such as "info+2").
type levelFlag struct{ level *slog.Level }

func (f levelFlag) String() string {
	if f.level == nil {
		return ""
	}
	return strings.ToLower(f.level.String())
}

func (f levelFlag) Set(s string) error { return f.level.UnmarshalText([]byte(s)) }

// envName returns the environment variable for a flag name.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args (without the program name). Every flag can also
// be given in the environment (see envName); the command line wins over the
// environment, which wins over the default. An empty environment variable
// counts as unset. -h prints the usage to stderr and returns flag.ErrHelp.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	o := options{
		addr:           "127.0.0.1:8080",
		devASAddr:      "127.0.0.1:9000",
		scopes:         []string{"mcp:tools"},
		tenantClaim:    "tenant",
		logLevel:       slog.LevelInfo,
		devAutoApprove: true,
		waitKeys:       defaultWaitKeys,
	}
	fs := flag.NewFlagSet("mcpserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", o.addr, "`host:port` to listen on for the MCP endpoint; port 0 picks a free port")
	fs.StringVar(&o.resource, "resource", "", "canonical `URL` of the MCP endpoint, the token audience (default http://<addr>/mcp; required when -addr is not loopback)")
	fs.StringVar(&o.issuer, "issuer", "", "issuer `URL` of an external authorization server (https, or http on loopback); empty starts the embedded development authorization server")
	fs.StringVar(&o.devASAddr, "dev-as-addr", o.devASAddr, "`host:port` of the embedded development authorization server (loopback only)")
	fs.Var(listFlag{&o.scopes}, "scopes", "base `scopes` every request needs, space- or comma-separated; empty means none")
	fs.Var(listFlag{&o.audiences}, "audience", "extra accepted token `audiences`, space- or comma-separated, besides -resource")
	fs.StringVar(&o.tenantClaim, "tenant-claim", o.tenantClaim, "token `claim` naming the principal's tenant (e.g. tid for Entra ID)")
	fs.DurationVar(&o.leeway, "leeway", 0, "clock skew tolerated on exp/nbf/iat; 0 means the validator default (30s), negative means none")
	fs.BoolVar(&o.allowJWTType, "allow-jwt-typ", false, "also accept tokens typed JWT or untyped, not only at+jwt (RFC 9068); WEAKENS validation, for issuers that cannot type access tokens")
	fs.BoolVar(&o.allowSCP, "allow-scp", false, "read scopes from the scp claim when scope is absent (Microsoft Entra ID, Okta)")
	fs.BoolVar(&o.allowMissingJTI, "allow-missing-jti", false, "accept tokens without jti (RFC 9068 requires it; Microsoft Entra ID omits it)")
	fs.BoolVar(&o.allowMissingClientID, "allow-missing-client-id", false, "accept tokens without client_id or azp (RFC 9068 requires client_id; Okta sends cid)")
	fs.Var(levelFlag{&o.logLevel}, "log-level", "log `level`: debug, info, warn or error")
	fs.BoolVar(&o.devAutoApprove, "dev-auto-approve", o.devAutoApprove, "embedded authorization server: approve every authorization request without a consent page")
	fs.Var(tokenModeFlag{&o.tokenMode}, "token-mode", "how access tokens are validated: `mode` jwt (JWTs checked locally against the issuer's keys), introspect (every token sent to the issuer's RFC 7662 introspection endpoint) or hybrid (JWTs of -issuer locally, any other token by introspection); introspect and hybrid need -issuer")
	fs.StringVar(&o.introspectionEndpoint, "introspection-endpoint", "", "RFC 7662 introspection endpoint `URL` (https, or http on loopback); empty means the introspection_endpoint of -issuer's metadata. Only with -token-mode introspect or hybrid")
	fs.StringVar(&o.introspectionClientID, "introspection-client-id", "", "client `id` this server authenticates with (HTTP Basic) at the introspection endpoint; required with -token-mode introspect or hybrid")
	// DPoP (RFC 9449), dpop.go.
	fs.Var(dpopFlag{&o.dpop}, "dpop", "DPoP-bound access tokens (RFC 9449): `policy` off (Bearer only), allowed (Bearer and DPoP) or required (DPoP only; published as dpop_bound_access_tokens_required)")
	fs.StringVar(&o.introspectionClientSecret, "introspection-client-secret", "", "client `secret` for the introspection endpoint; prefer the environment (MCPGUARD_INTROSPECTION_CLIENT_SECRET): command lines are visible to other local users")
	// Key refresh and introspection relaxations.
	fs.StringVar(&o.jwksURL, "jwks-url", "", "JWK Set `URL` of -issuer (https, or http on loopback); empty means the jwks_uri of -issuer's metadata")
	fs.DurationVar(&o.jwksRefreshInterval, "jwks-refresh-interval", 0, "period of background JWKS refreshes after a successful one; 0 means 15m")
	fs.DurationVar(&o.jwksRefreshRateLimit, "jwks-refresh-rate-limit", 0, "minimum time between on-demand JWKS refreshes (unknown kid, failed signature under a known kid); a refused one is deferred to when the limit opens, so a new signing key is accepted within about this long; 0 means 4s")
	fs.DurationVar(&o.jwksWaitTimeout, "jwks-wait-timeout", 0, "longest a request waits for a running JWKS refresh; 0 means 2s")
	fs.BoolVar(&o.introspectionAllowMissingAudience, "introspection-allow-missing-aud", false, "accept introspection responses without aud (RFC 7662 makes it optional; Keycloak and others omit it unless configured); WEAKENS validation: any active token of the issuer is then accepted. Only with -token-mode introspect or hybrid")
	fs.BoolVar(&o.introspectionAllowMissingSubject, "introspection-allow-missing-sub", false, "accept introspection responses without sub (the JWT path requires sub by default too); WEAKENS validation: the principal then has no subject. Only with -token-mode introspect or hybrid")

	// Operations: readiness and fail-fast start-up (ops).
	fs.DurationVar(&o.waitKeys, "wait-keys", o.waitKeys, "with -issuer: how long start-up waits for the issuer's first key set before failing with the cause (DNS, TLS, 404, issuer mix-up); 0 starts at once and serves 503 until the keys arrive")

	// Session mode (gosdk adapter).
	fs.Var(listFlag{&o.allowedOrigins}, "allowed-origins", "browser `origins` (scheme://host[:port], space- or comma-separated) allowed to call the MCP endpoint besides its own, with CORS answers, e.g. http://localhost:6274 for MCP Inspector's direct connection; * allows every origin and DISABLES the DNS-rebinding check")
	fs.TextVar(&o.lists, "lists", middleware.ListAnnotate, "what tools/list and the other lists show: annotate (every tool a client could obtain, each with the scopes it needs in _meta.securitySchemes), hide (only what the token may call) or off")
	fs.BoolVar(&o.stateful, "stateful", false, "serve with the go-sdk's default stateful handler (Mcp-Session-Id sessions bound to the principal that created them, GET streams, DELETE; MCP 2025-11-25 and older only) instead of the stateless one, which also serves 2026-07-28")

	// CIMD development mode (cimddev.go).
	fs.BoolVar(&o.devInsecureCIMDLoopback, "dev-insecure-cimd-loopback", false, "DANGEROUS, development only: the embedded authorization server fetches Client ID Metadata Documents from https URLs on loopback (127.0.0.0/8, [::1], any port), which it refuses by default; only with the embedded server")
	fs.StringVar(&o.devCIMDRootCA, "dev-cimd-root-ca", "", "PEM `file` of the CA that signed the loopback metadata document server's certificate (e.g. mkcert's rootCA.pem), used instead of the system roots; only with -dev-insecure-cimd-loopback")

	// Enterprise flows (enterprise.go).
	fs.StringVar(&o.devIdPAddr, "dev-idp-addr", "", "`host:port` (loopback only) of a DEVELOPMENT enterprise identity provider to start, trusted by the embedded authorization server for ID-JAGs (Enterprise-Managed Authorization) and workload JWTs (Workload Identity Federation); empty starts none")
	fs.StringVar(&o.devXAASecret, "dev-xaa-secret", "", "with -dev-idp-addr: the `secret` of client "+devXAAClientID+" at the embedded authorization server; empty means a random one, printed at start")
	fs.Var(listFlag{&o.devWorkloadSubjects}, "dev-workload-subjects", "with -dev-idp-addr: workload `subjects` the embedded authorization server accepts from the IdP's workload JWTs, space- or comma-separated; an entry ending in * is a prefix (default "+devWorkloadSubject+"*)")

	fs.Usage = func() { printUsage(fs) }
	var envErrs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := envName(f.Name)
		if v := getenv(name); v != "" {
			if err := f.Value.Set(v); err != nil {
				envErrs = append(envErrs, fmt.Errorf("invalid value for %s: %w", name, err))
			}
		}
	})
	if err := errors.Join(envErrs...); err != nil {
		return options{}, err
	}
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return o, nil
}

// printUsage prints the -h text: every flag with its environment
// variable.
func printUsage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintf(w, `Usage: mcpserver [flags]

The mcpguard example MCP server. Without -issuer it starts an embedded
DEVELOPMENT authorization server on -dev-as-addr.

Every flag can also be set in the environment as MCPGUARD_<FLAG>, dashes
as underscores (named below each flag); the command line wins.

Flags:
`)
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  -" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		}
		fmt.Fprintf(w, "\n    \tenvironment: %s\n", envName(f.Name))
	})
}
