package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// TestAuditTransportThroughProxy (issue 23 item 8, the audit's TR-*
// checks): the 2026-07-28 transport checks (TR-HEADER-MISMATCH,
// TR-GET-DELETE-405, TR-UNSUPPORTED-VERSION, TR-META-MISSING) need a
// server that serves 2026-07-28. TestAuditThroughProxy's stateful go-sdk
// upstream does not (the go-sdk serves 2026-07-28 statelessly only), so
// there the audit skips them as "not applicable". In front of a stateless
// go-sdk upstream, "mcpguard proxy" serves 2026-07-28, and "mcpguard audit
// -token -token2 -upstream -assertion-key" runs them: each passes, as do
// the other TR-* checks, and no MUST check fails.
func TestAuditTransportThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole audit")
	}
	addr := freeAddr(t)
	origin := "http://" + addr
	resource := origin + "/mcp"
	as, issuer := startDevAS(t, resource)
	up := startUpstream(t, origin)
	keyFile := assertionKeyFile(t)
	startProxyCmd(t, addr, fmt.Sprintf(`routes:
  - resource: %s
    upstream: %s
    issuers: [%s]
    scopes: [mcp:tools]
assertion:
  key_file: %s
`, resource, up.url, issuer, keyFile), nil)
	tok := func(sub, tenant string) string {
		tk, err := as.IssueToken(sub, tenant, e2eClientID, resource, []string{"mcp:tools"})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	var out, errOut lockedBuf
	code := run(context.Background(), []string{"audit", "-json",
		"-token", tok("alice", "tenant-a"), "-token2", tok("bob", "tenant-b"),
		"-upstream", up.url, "-assertion-key", keyFile, resource,
	}, func(string) string { return "" }, &out, &errOut)
	var rep struct {
		Results []struct {
			ID       string `json:"id"`
			Severity string `json:"severity"`
			Verdict  string `json:"verdict"`
			Detail   string `json:"detail"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("audit exited %d, report: %v\n%s\n%s", code, err, out.String(), errOut.String())
	}
	verdict := map[string]string{}
	for _, r := range rep.Results {
		verdict[r.ID] = r.Verdict
		if r.Verdict == "fail" && r.Severity == "MUST" {
			t.Errorf("MUST failure %s: %s", r.ID, r.Detail)
		}
		if testing.Verbose() && r.Verdict != "pass" {
			t.Logf("%s %s %s: %s", r.ID, r.Severity, r.Verdict, r.Detail)
		}
	}
	if code != 0 {
		t.Errorf("mcpguard audit exited %d, want 0:\n%s", code, errOut.String())
	}
	for _, id := range []string{"TR-QUERY-TOKEN", "TR-DUPLICATE-AUTHORIZATION", "TR-ORIGIN",
		"TR-HEADER-MISMATCH", "TR-GET-DELETE-405", "TR-UNSUPPORTED-VERSION", "TR-META-MISSING"} {
		if verdict[id] != "pass" {
			t.Errorf("%s = %q, want pass", id, verdict[id])
		}
	}
}
