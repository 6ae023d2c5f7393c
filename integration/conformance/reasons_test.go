package conformance

import (
	"io"
	"log"
)

var discardLog = log.New(io.Discard, "", 0)

// failsDirectly says, for each scenario that fails against a server
// directly ("server revision scenario"), why: a fixture the upstream
// lacks, not mcpguard. The test fails when a scenario fails directly
// without a reason here, or passes while listed.
// Reasons shared by several scenarios.
const (
	noTasks   = "the server does not implement the tasks extension (SEP-2663; the suite runs it, unscored): its fixtures (greet, slow_compute, confirm_delete, failing_job, …) are unknown tools and it advertises no capabilities.extensions"
	noFixture = "the reference server-everything is a demonstration server, not the suite's fixture: it lacks the test_* tools, prompts and resources the scenario calls (its own are echo, get-sum, …), or they answer differently"
)

var failsDirectly = map[string]string{
	"go-sdk 2026-07-28 tasks-lifecycle":                   noTasks,
	"go-sdk 2026-07-28 tasks-capability-negotiation":      noTasks,
	"go-sdk 2026-07-28 tasks-wire-fields":                 noTasks,
	"go-sdk 2026-07-28 tasks-request-state-removal":       noTasks,
	"go-sdk 2026-07-28 tasks-mrtr-input":                  noTasks,
	"go-sdk 2026-07-28 tasks-request-headers":             noTasks,
	"go-sdk 2026-07-28 tasks-dispatch-and-envelope":       noTasks,
	"go-sdk 2026-07-28 tasks-required-task-error":         noTasks,
	"go-sdk 2026-07-28 tasks-mrtr-composition":            noTasks,
	"typescript 2025-11-25 completion-complete":           noFixture,
	"typescript 2025-11-25 tools-call-image":              noFixture,
	"typescript 2025-11-25 tools-call-audio":              noFixture,
	"typescript 2025-11-25 tools-call-embedded-resource":  noFixture,
	"typescript 2025-11-25 tools-call-mixed-content":      noFixture,
	"typescript 2025-11-25 tools-call-with-logging":       noFixture,
	"typescript 2025-11-25 tools-call-with-progress":      noFixture,
	"typescript 2025-11-25 tools-call-sampling":           noFixture,
	"typescript 2025-11-25 tools-call-elicitation":        noFixture,
	"typescript 2025-11-25 elicitation-sep1034-defaults":  noFixture,
	"typescript 2025-11-25 elicitation-sep1330-enums":     noFixture,
	"typescript 2025-11-25 resources-read-text":           noFixture,
	"typescript 2025-11-25 resources-read-binary":         noFixture,
	"typescript 2025-11-25 resources-templates-read":      noFixture,
	"typescript 2025-11-25 prompts-get-simple":            noFixture,
	"typescript 2025-11-25 prompts-get-with-args":         noFixture,
	"typescript 2025-11-25 prompts-get-embedded-resource": noFixture,
	"typescript 2025-11-25 prompts-get-with-image":        noFixture,
	"typescript 2025-11-25 json-schema-2020-12":           noFixture,
	"typescript 2025-11-25 server-sse-polling":            noFixture,
	"typescript 2025-11-25 dns-rebinding-protection":      "the server checks neither Host nor Origin (its localhost-host-rebinding-rejected check; mcpguard passes it, see below)",
	"typescript 2025-11-25 server-session-lifecycle":      "the server answers 400, not 404, for a deleted session (server-session-terminated-returns-404; mcpguard passes it, see below)",
}

// betterBehind lists the checks ("server revision scenario check") that
// pass behind mcpguard while they fail directly, because mcpguard answers
// them itself as the spec requires, and why.
var betterBehind = map[string]string{
	"typescript 2025-11-25 dns-rebinding-protection localhost-host-rebinding-rejected":       "the server does not check Host or Origin; mcpguard refuses the foreign Origin with 403 (Streamable HTTP: servers MUST validate Origin)",
	"typescript 2025-11-25 server-session-lifecycle server-session-terminated-returns-404":   "the server answers 400 for a deleted session; mcpguard's session binding forgets the session at its DELETE and answers 404, as 2025-11-25 transports require",
	"go-sdk 2026-07-28 tasks-dispatch-and-envelope sep-2663-tasks-get-invalid-task-id-32602": "the server has no tasks (-32601); mcpguard's task binding answers tasks/get of a task the caller does not own -32602, as SEP-2663 requires of an unknown taskId",
}

// Reasons of overTLS.
const (
	dnsOverTLS = "the scenario sends a Host and an Origin http://HOST of its own: over TLS, Node takes the foreign Host (evil.example.com) as the server name, for which Caddy has no certificate, so the handshake fails before any HTTP answer (a refusal, but not the 4xx the check reads), and the valid request's Origin http://127.0.0.1:PORT is not the https resource's origin, which mcpguard refuses with 403"
	plainHTTP  = "the scenario sends its header cases with Node's http.request, plain HTTP whatever the URL's scheme, which Caddy's TLS listener answers 400 (Client sent an HTTP request to an HTTPS server) before mcpguard sees them"
)

// overTLS lists the scenarios ("server revision scenario") that the suite
// cannot run over TLS, and why: the caddy way (https) is not compared with
// direct (http) for them. The test fails when one gives the same checks
// through Caddy as directly, so that the list shrinks with the suite.
var overTLS = map[string]string{
	"go-sdk 2025-11-25 dns-rebinding-protection":             dnsOverTLS,
	"go-sdk 2026-07-28 dns-rebinding-protection":             dnsOverTLS,
	"typescript 2025-11-25 dns-rebinding-protection":         dnsOverTLS,
	"go-sdk 2026-07-28 http-header-validation":               plainHTTP,
	"go-sdk 2026-07-28 http-custom-header-server-validation": plainHTTP,
}

// stdioDiffers lists the checks ("server revision scenario check") whose
// status may differ between the server's Streamable HTTP mode (direct)
// and its stdio mode behind mcpguard's stdio bridge (the stdio way), and
// why: what the bridge does not do that the server's own HTTP transport
// does. The test fails when a listed check no longer differs.
var stdioDiffers = map[string]string{}
