package audit

import (
	"fmt"
	"regexp"
	"strings"
)

// leakPatterns match text that tells an attacker about the server's
// internals: stack traces, file paths, and the error texts of common
// token, crypto, JSON and database libraries.
var leakPatterns = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a Go stack trace", regexp.MustCompile(`goroutine \d+ \[|panic: |runtime error: `)},
	{"a source file position", regexp.MustCompile(`[\w/.-]+\.(go|py|js|ts|java|rb|rs|cs):\d+`)},
	{"a Python traceback", regexp.MustCompile(`Traceback \(most recent call last\)`)},
	{"a Java or JavaScript stack frame", regexp.MustCompile(`\n\s+at [\w$.<>]+\(`)},
	{"a module cache or home path", regexp.MustCompile(`/go/pkg/mod/|/usr/local/go/|/home/\w+/|C:\\Users\\`)},
	{"a JOSE/JWT library error", regexp.MustCompile(`(?i)go-jose|square/go-jose|jsonwebtoken|JsonWebTokenError|TokenExpiredError|token has invalid claims|token signature is invalid|crypto/(rsa|ecdsa|ed25519)|\bx509: |\bjws: |\bjwt: |\boidc: |\bvalidate: (malformed|signature|token|issuer|audience|key)`)},
	{"a JSON decoder error", regexp.MustCompile(`json: cannot unmarshal|invalid character '.{1,4}' (looking for|after|in)|unexpected end of JSON input`)},
	{"a database or network error", regexp.MustCompile(`SQLSTATE|\bpq: |ECONNREFUSED|dial tcp |connection refused`)},
}

// urlRe matches absolute URLs, which are removed before scanning: a host
// such as api.example.rs:443 is not a source position.
var urlRe = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>,]*`)

// leakIn returns what leaks in s, or "".
func leakIn(s string) string {
	s = urlRe.ReplaceAllString(s, "URL")
	for _, p := range leakPatterns {
		if p.re.MatchString(s) {
			return p.what
		}
	}
	return ""
}

// checkLeaks scans the error answers seen during the run (bodies and
// WWW-Authenticate values) for internals.
func (a *Auditor) checkLeaks() {
	if len(a.refusals) == 0 {
		a.skip(LeakErrorBody, "no error answer was seen")
		return
	}
	bad := false
	for _, x := range a.refusals {
		text := string(x.body) + "\n" + strings.Join(x.header.Values("WWW-Authenticate"), "\n")
		if what := leakIn(text); what != "" {
			bad = true
			a.fail(LeakErrorBody, "an error answer contains "+what, a.evidence(x))
		}
	}
	if !bad {
		a.pass(LeakErrorBody, fmt.Sprintf("%d error answers scanned", len(a.refusals)))
	}
}
