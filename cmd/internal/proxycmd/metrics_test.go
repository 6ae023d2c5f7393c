package proxycmd

import (
	"net/http"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestPrometheusMetrics: -metrics-addr serves otelguard's metrics at
// /metrics on a listener of its own, in the Prometheus text format (parsed
// with the Prometheus text parser): after one allowed and one refused
// request, the decision counter counts both, by outcome. The proxy's own
// listener has no /metrics, and without the flag there is none.
func TestPrometheusMetrics(t *testing.T) {
	upstream, _ := plainUpstream(t)
	addr, devAddr, metricsAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	o, err := parseFlags([]string{"-addr", addr, "-upstream", upstream, "-dev-as", devAddr, "-scopes", "mcp:tools", "-metrics-addr", metricsAddr}, &syncBuf{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := startRun(t, o, nil)
	if st.Metrics != "http://"+metricsAddr+"/metrics" {
		t.Fatalf("metrics URL %q", st.Metrics)
	}
	tok, err := st.DevAS.IssueToken("alice", "tenant-a", "cli", st.Resource, []string{"mcp:tools"})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := callTool(t, st.Resource, tok, "ping"); code != http.StatusOK {
		t.Fatalf("call: %d", code)
	}
	if code, _ := callTool(t, st.Resource, "not-a-token", "ping"); code != http.StatusUnauthorized {
		t.Fatalf("bad token: %d", code)
	}
	resp, err := http.Get(st.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	fam := fams["mcpguard_decisions_total"]
	if fam == nil {
		names := make([]string, 0, len(fams))
		for n := range fams {
			names = append(names, n)
		}
		t.Fatalf("no mcpguard_decisions_total among %v", names)
	}
	var total float64
	outcomes := map[string]bool{}
	for _, m := range fam.GetMetric() {
		total += m.GetCounter().GetValue()
		for _, l := range m.GetLabel() {
			if l.GetName() == "mcpguard_decision_outcome" {
				outcomes[l.GetValue()] = true
			}
		}
	}
	if total < 2 || len(outcomes) < 2 {
		t.Errorf("decisions: total %v, outcomes %v; want both requests, two outcomes", total, outcomes)
	}
	if r, err := http.Get("http://" + addr + "/metrics"); err == nil {
		if r.StatusCode != http.StatusNotFound {
			t.Errorf("proxy listener /metrics: %d, want 404", r.StatusCode)
		}
		r.Body.Close()
	}
}
