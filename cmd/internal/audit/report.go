package audit

import (
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// InformationURI is where the SARIF report sends readers.
const InformationURI = "https://github.com/mcpguard/mcpguard/blob/main/docs/audit.md"

// maxLine bounds an evidence line in the table unless verbose.
const maxLine = 240

// WriteTable writes rep as a table: one row per check (ID, verdict,
// severity, clause), then the detail and evidence lines indented below it.
// Failures show all their evidence; other rows show the first line,
// shortened, or everything when verbose is true.
func WriteTable(w io.Writer, rep *Report, verbose bool) error {
	fmt.Fprintf(w, "mcpguard audit %s (credentials: %s, %d requests)\n\n", rep.Endpoint, rep.Credentials, rep.Requests)
	width := len("CHECK")
	for _, r := range rep.Results {
		width = max(width, len(r.ID))
	}
	fmt.Fprintf(w, "%-*s  %-7s  %-8s  %s\n", width, "CHECK", "VERDICT", "SEVERITY", "CLAUSE")
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%-*s  %-7s  %-8s  %s\n", width, r.ID, strings.ToUpper(string(r.Verdict)), r.Severity, r.Clause)
		if r.Detail != "" {
			fmt.Fprintf(w, "    %s\n", r.Detail)
		}
		ev := r.Evidence
		if r.Verdict != Fail && !verbose && len(ev) > 1 {
			ev = ev[:1]
		}
		for _, e := range ev {
			if r.Verdict != Fail && !verbose {
				e = cut(e, maxLine)
			}
			fmt.Fprintf(w, "    | %s\n", e)
		}
	}
	var pass, fail, skip int
	failBy := map[Severity]int{}
	for _, r := range rep.Results {
		switch r.Verdict {
		case Pass:
			pass++
		case Fail:
			fail++
			failBy[r.Severity]++
		default:
			skip++
		}
	}
	_, err := fmt.Fprintf(w, "\n%d checks: %d pass, %d fail (MUST %d, SHOULD %d, MAY %d), %d skip\n",
		len(rep.Results), pass, fail, failBy[Must], failBy[Should], failBy[May], skip)
	return err
}

// WriteJSON writes rep as indented JSON.
func WriteJSON(w io.Writer, rep *Report) error {
	b, err := json.Marshal(rep, jsontext.WithIndent("  "), json.Deterministic(true))
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// sarifLevel maps a severity to a SARIF result level.
func sarifLevel(s Severity) string {
	switch s {
	case Must:
		return "error"
	case Should:
		return "warning"
	}
	return "note"
}

// WriteSARIF writes rep as a SARIF 2.1.0 log: one rule per check of the
// catalog and one result per failing check, located at the endpoint.
func WriteSARIF(w io.Writer, rep *Report, version string) error {
	type text struct {
		Text string `json:"text"`
	}
	type rule struct {
		ID                   string            `json:"id"`
		Name                 string            `json:"name"`
		ShortDescription     text              `json:"shortDescription"`
		FullDescription      text              `json:"fullDescription"`
		HelpURI              string            `json:"helpUri"`
		DefaultConfiguration map[string]string `json:"defaultConfiguration"`
		Properties           map[string]any    `json:"properties"`
	}
	type result struct {
		RuleID    string           `json:"ruleId"`
		Level     string           `json:"level"`
		Message   text             `json:"message"`
		Locations []map[string]any `json:"locations"`
	}
	var rules []rule
	var results []result
	for _, c := range Catalog() {
		rules = append(rules, rule{
			ID: c.ID, Name: c.ID, ShortDescription: text{c.Title},
			FullDescription:      text{c.Title + " (" + string(c.Severity) + ": " + c.Clause + ")"},
			HelpURI:              InformationURI,
			DefaultConfiguration: map[string]string{"level": sarifLevel(c.Severity)},
			Properties:           map[string]any{"tags": []string{"security", "mcp", "oauth", string(c.Severity)}},
		})
	}
	loc := []map[string]any{{"physicalLocation": map[string]any{"artifactLocation": map[string]any{"uri": rep.Endpoint}}}}
	for _, r := range rep.Results {
		if r.Verdict != Fail {
			continue
		}
		msg := r.Title
		if r.Detail != "" {
			msg += ": " + r.Detail
		}
		for _, e := range r.Evidence {
			msg += "\n" + e
		}
		results = append(results, result{RuleID: r.ID, Level: sarifLevel(r.Severity), Message: text{msg}, Locations: loc})
	}
	if results == nil {
		results = []result{}
	}
	log := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name": "mcpguard-audit", "version": version, "informationUri": InformationURI, "rules": rules,
			}},
			"results": results,
		}},
	}
	b, err := json.Marshal(log, jsontext.WithIndent("  "), json.Deterministic(true))
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
