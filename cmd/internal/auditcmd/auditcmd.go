// Package auditcmd is the `mcpguard audit` subcommand: flag parsing and
// output around the engine in cmd/internal/audit. docs/audit.md documents
// every flag and exit code.
package auditcmd

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcpguard/mcpguard/cmd/internal/audit"
)

// Exit codes of [Run].
const (
	ExitOK       = 0 // no failure at or above -fail-on
	ExitFailed   = 1 // at least one failure at or above -fail-on
	ExitUsage    = 2 // bad flags or arguments
	ExitNotAudit = 3 // the endpoint could not be audited (unreachable, interrupted, output error)
)

// Name is the command's name in messages.
const Name = "mcpguard audit"

// version is reported in SARIF.
const version = "0.1.0"

// envPrefix starts the environment variables that may carry secrets, so
// that they need not appear on the command line.
const envPrefix = "MCPGUARD_AUDIT_"

// options are the parsed flags.
type options struct {
	endpoint     string
	token        string
	token2       string
	clientID     string
	clientSecret string
	tokenURL     string
	issuer       string
	scopes       string
	tenant2      string
	tenantArg    string
	tools        string
	noToolCalls  bool
	jsonOut      bool
	sarifFile    string
	failOn       string
	timeout      time.Duration
	interval     time.Duration
	maxRequests  int
	perHost      int
	deadline     time.Duration
	verbose      bool
	caFile       string
	upstream     string
	assertKey    string
	assertIss    string
	assertAud    string
	assertHeader string
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet(Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: "+Name+" [flags] URL\n\nChecks the authorization of the MCP endpoint URL black-box. See docs/audit.md.\n\nflags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.token, "token", "", "a valid access `token` for the endpoint (or "+envPrefix+"TOKEN); enables the credentialed checks")
	fs.StringVar(&o.token2, "token2", "", "a `token` of another principal, ideally another tenant (or "+envPrefix+"TOKEN2): session binding and tenant checks")
	fs.StringVar(&o.clientID, "client-id", "", "client `id` for the client credentials grant, used when -token is empty; needs -token-url or -issuer")
	fs.StringVar(&o.clientSecret, "client-secret", "", "client `secret` (prefer "+envPrefix+"CLIENT_SECRET: command lines are visible to other users)")
	fs.StringVar(&o.tokenURL, "token-url", "", "token endpoint `URL` for the client credentials grant (https, or http on loopback)")
	fs.StringVar(&o.issuer, "issuer", "", "authorization server `issuer` whose metadata names the token endpoint, when -token-url is empty; its token_endpoint must be on the metadata's origin")
	fs.StringVar(&o.scopes, "scope", "", "`scopes` to request with client credentials, space-separated")
	fs.StringVar(&o.tenant2, "tenant2", "", "the `tenant` of -token2 (default: its tenant/tid claim)")
	fs.StringVar(&o.tenantArg, "tenant-arg", "", "tool argument `name` that selects a tenant (default: tenant, tenant_id, org_id, workspace, account, ...)")
	fs.StringVar(&o.tools, "tools", "", "comma-separated tool `names` the audit calls, listed or not, and no others (default: every tool listed for -token or -token2)")
	fs.BoolVar(&o.noToolCalls, "no-tool-calls", false, "never call a tool (skips the step-up and tenant checks)")
	fs.BoolVar(&o.jsonOut, "json", false, "print the report as JSON instead of a table")
	fs.StringVar(&o.sarifFile, "sarif", "", "also write a SARIF 2.1.0 report to `file` (\"-\" for stdout, replacing the table)")
	fs.StringVar(&o.failOn, "fail-on", "must", "exit 1 when a check of this `severity` or stronger fails: must, should or may")
	fs.DurationVar(&o.timeout, "timeout", audit.DefaultTimeout, "bound on each request")
	fs.DurationVar(&o.interval, "interval", audit.DefaultInterval, "least time between two requests")
	fs.IntVar(&o.maxRequests, "max-requests", audit.DefaultMaxRequests, "most requests sent")
	fs.IntVar(&o.perHost, "max-requests-per-host", audit.DefaultMaxRequestsPerHost, "most requests sent to any one host the audited server names (authorization servers, metadata and key URLs)")
	fs.DurationVar(&o.deadline, "deadline", audit.DefaultDeadline, "bound on the whole run")
	fs.BoolVar(&o.verbose, "v", false, "show all evidence of every check")
	fs.StringVar(&o.upstream, "upstream", "", "`URL` of the MCP server behind a proxy, as the proxy reaches it: adds the PROXY-* checks")
	fs.StringVar(&o.assertKey, "assertion-key", "", "PEM `file` of the proxy's assertion signing key (PROXY-UPSTREAM-AUDIENCE)")
	fs.StringVar(&o.assertIss, "assertion-issuer", "", "`iss` of the proxy's assertions (default: the endpoint's origin)")
	fs.StringVar(&o.assertAud, "assertion-audience", "", "`aud` the upstream expects (default: -upstream)")
	fs.StringVar(&o.assertHeader, "assertion-header", "", "`header` carrying the assertion (default: Authorization, as Bearer)")
	fs.StringVar(&o.caFile, "ca-file", "", "PEM `file` of CA certificates to trust instead of the system roots")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return o, errors.New("exactly one endpoint URL is required")
	}
	o.endpoint = fs.Arg(0)
	for _, e := range []struct {
		v    *string
		name string
	}{{&o.token, "TOKEN"}, {&o.token2, "TOKEN2"}, {&o.clientSecret, "CLIENT_SECRET"}} {
		if *e.v == "" {
			*e.v = strings.TrimSpace(getenv(envPrefix + e.name))
		}
	}
	if _, ok := audit.ParseSeverity(o.failOn); !ok {
		return o, fmt.Errorf("-fail-on must be must, should or may, not %q", o.failOn)
	}
	if o.jsonOut && o.sarifFile == "-" {
		return o, errors.New("-json and -sarif - both write to stdout: pick one")
	}
	return o, nil
}

// Run is the command: args are its arguments (after "audit"), getenv reads
// the environment (the MCPGUARD_AUDIT_* secrets). It returns the exit code.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, getenv, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, Name+":", err)
		}
		return ExitUsage
	}
	failOn, _ := audit.ParseSeverity(o.failOn)
	cfg := audit.Config{
		Endpoint:  o.endpoint,
		Token:     o.token,
		Token2:    o.token2,
		Tenant2:   o.tenant2,
		TenantArg: o.tenantArg,
		CallTools: !o.noToolCalls,
		Timeout:   o.timeout,
		Interval:  o.interval,
		ClientCredentials: audit.ClientCredentials{
			TokenURL: o.tokenURL, Issuer: o.issuer, ClientID: o.clientID, ClientSecret: o.clientSecret,
			Scopes: strings.Fields(o.scopes),
		},
		MaxRequests:        o.maxRequests,
		MaxRequestsPerHost: o.perHost,
		Deadline:           o.deadline,
	}
	if o.interval <= 0 {
		cfg.Interval = -1
	}
	if o.caFile != "" {
		pem, err := os.ReadFile(o.caFile)
		if err != nil {
			fmt.Fprintln(stderr, Name+": -ca-file:", err)
			return ExitUsage
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			fmt.Fprintln(stderr, Name+": -ca-file: no PEM certificate found")
			return ExitUsage
		}
	}
	cfg.Proxy = audit.Proxy{Upstream: o.upstream, AssertionIssuer: o.assertIss, AssertionAudience: o.assertAud, AssertionHeader: o.assertHeader}
	if o.assertKey != "" {
		b, err := os.ReadFile(o.assertKey)
		if err != nil {
			fmt.Fprintln(stderr, Name+": -assertion-key:", err)
			return ExitUsage
		}
		if cfg.Proxy.AssertionKey, err = audit.ParseAssertionKey(b); err != nil {
			fmt.Fprintln(stderr, Name+": -assertion-key:", err)
			return ExitUsage
		}
	}
	if o.tools != "" {
		for _, t := range strings.Split(o.tools, ",") {
			if t = strings.TrimSpace(t); t != "" {
				cfg.Tools = append(cfg.Tools, t)
			}
		}
	}
	a, err := audit.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, Name+":", err)
		return ExitUsage
	}
	rep, runErr := a.Run(ctx)
	if rep == nil {
		fmt.Fprintln(stderr, Name+":", runErr)
		return ExitNotAudit
	}
	switch {
	case o.sarifFile == "-":
		err = audit.WriteSARIF(stdout, rep, version)
	case o.jsonOut:
		err = audit.WriteJSON(stdout, rep)
	default:
		err = audit.WriteTable(stdout, rep, o.verbose)
	}
	if err == nil && o.sarifFile != "" && o.sarifFile != "-" {
		err = writeFile(o.sarifFile, func(w io.Writer) error { return audit.WriteSARIF(w, rep, version) })
	}
	if err != nil {
		fmt.Fprintln(stderr, Name+": writing the report:", err)
		return ExitNotAudit
	}
	if runErr != nil {
		fmt.Fprintln(stderr, Name+":", runErr)
		return ExitNotAudit
	}
	if failed := rep.Failed(failOn); len(failed) > 0 {
		ids := make([]string, len(failed))
		for i, r := range failed {
			ids[i] = r.ID
		}
		fmt.Fprintf(stderr, Name+": %d check(s) at or above %s failed: %s\n", len(failed), failOn, strings.Join(ids, ", "))
		return ExitFailed
	}
	return ExitOK
}

// writeFile writes a file through fn.
func writeFile(name string, fn func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
