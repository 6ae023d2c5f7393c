package audit

// Severity is the strength of the rule a check enforces, after RFC 2119.
type Severity string

// Severities, strongest first.
const (
	// Must: the specification says MUST or MUST NOT.
	Must Severity = "MUST"
	// Should: the specification says SHOULD or SHOULD NOT.
	Should Severity = "SHOULD"
	// May: advice (MAY, or a defence the specification leaves to the
	// implementation). A failure is reported but is a finding, not a
	// violation.
	May Severity = "MAY"
)

// rank orders severities: higher is stronger.
func (s Severity) rank() int {
	switch s {
	case Must:
		return 3
	case Should:
		return 2
	case May:
		return 1
	}
	return 0
}

// AtLeast reports whether s is at least as strong as min.
func (s Severity) AtLeast(min Severity) bool { return s.rank() >= min.rank() }

// ParseSeverity parses "must", "should" or "may" (any case).
func ParseSeverity(s string) (Severity, bool) {
	switch s {
	case "must", "MUST":
		return Must, true
	case "should", "SHOULD":
		return Should, true
	case "may", "MAY":
		return May, true
	}
	return "", false
}

// Verdict is the outcome of one check.
type Verdict string

// Verdicts.
const (
	// Pass: the server did what the rule asks, for everything the check
	// sent.
	Pass Verdict = "pass"
	// Fail: the server broke the rule; Evidence shows the exchange.
	Fail Verdict = "fail"
	// Skip: the check could not run (it needs credentials, the server
	// does not implement the feature, or an earlier step failed); Evidence
	// says why.
	Skip Verdict = "skip"
)

// CheckInfo describes one check of the catalog.
type CheckInfo struct {
	// ID is the stable identifier, e.g. "TOK-ALG-NONE".
	ID string `json:"id"`
	// Title says in a few words what the check verifies.
	Title string `json:"title"`
	// Severity is the strength of the rule.
	Severity Severity `json:"severity"`
	// Clause names the specification text the check enforces.
	Clause string `json:"clause"`
	// Credentials is true when the check needs a token (or a second one).
	Credentials bool `json:"credentials,omitempty"`
}

// Check IDs. The catalog below and docs/audit.md list them in this order.
const (
	CH401              = "CH-401"
	CHGrammar          = "CH-GRAMMAR"
	CHNoError          = "CH-NO-ERROR"
	CHResourceMetadata = "CH-RESOURCE-METADATA"
	CHScope            = "CH-SCOPE"
	CHNoOffline        = "CH-NO-OFFLINE-ACCESS"

	PRMDiscovery    = "PRM-DISCOVERY"
	PRMDocument     = "PRM-DOCUMENT"
	PRMResource     = "PRM-RESOURCE"
	PRMAuthServers  = "PRM-AUTHORIZATION-SERVERS"
	PRMPathInserted = "PRM-PATH-INSERTED"
	PRMRoot         = "PRM-ROOT"
	PRMNoOffline    = "PRM-NO-OFFLINE-ACCESS"
	PRMHost         = "PRM-NOT-FROM-HOST"

	ASMetadata     = "AS-METADATA"
	ASIssuer       = "AS-ISSUER"
	ASRFC8414      = "AS-RFC8414"
	ASPKCE         = "AS-PKCE-S256"
	ASCIMD         = "AS-CIMD"
	ASRegistration = "AS-REGISTRATION"

	TOKGarbage     = "TOK-GARBAGE"
	TOKAlgNone     = "TOK-ALG-NONE"
	TOKUnknownKey  = "TOK-UNKNOWN-KEY"
	TOKExpired     = "TOK-EXPIRED"
	TOKWrongAud    = "TOK-WRONG-AUDIENCE"
	TOKHS256PubKey = "TOK-HS256-PUBLIC-KEY"
	TOKOversized   = "TOK-OVERSIZED"
	TOKErrorCode   = "TOK-INVALID-TOKEN-CODE"

	TRQueryToken     = "TR-QUERY-TOKEN"
	TRDuplicateAuth  = "TR-DUPLICATE-AUTHORIZATION"
	TROrigin         = "TR-ORIGIN"
	TRHeaderMismatch = "TR-HEADER-MISMATCH"
	TRMethods        = "TR-GET-DELETE-405"
	TRVersion        = "TR-UNSUPPORTED-VERSION"
	TRMetaMissing    = "TR-META-MISSING"

	LeakErrorBody = "LEAK-ERROR-BODY"

	CredAccepted    = "CRED-ACCEPTED"
	StepUp          = "STEP-UP"
	StepUpBeforeRun = "STEP-UP-BEFORE-EXECUTION"
	StepUpChallenge = "STEP-UP-403-CHALLENGE"
	StepUpBound     = "STEP-UP-BOUND"
	SessionBinding  = "SESSION-BINDING"
	TenantFromToken = "TENANT-FROM-TOKEN"

	ProxyNoIdentity  = "PROXY-UPSTREAM-NO-IDENTITY"
	ProxyClientToken = "PROXY-UPSTREAM-CLIENT-TOKEN"
	ProxyForged      = "PROXY-UPSTREAM-FORGED-ASSERTION"
	ProxyAudience    = "PROXY-UPSTREAM-AUDIENCE"
	ProxyMetadata    = "PROXY-METADATA-PUBLIC-URL"

	clauseMCPAuth     = "MCP auth "
	clauseMCPHTTP2026 = "MCP 2026-07-28 Streamable HTTP "
)

// Catalog returns every check, in report order. The slice is new on each
// call.
func Catalog() []CheckInfo {
	return []CheckInfo{
		{CH401, "request without a token gets 401", Must, clauseMCPAuth + "§Error Handling; RFC 6750 §3", false},
		{CHGrammar, "401 carries a well-formed Bearer challenge with quoted auth-params", Must, "RFC 6750 §3; RFC 9110 §11.6.1, §5.6.4", false},
		{CHNoError, "no error code when no credentials were sent", Should, "RFC 6750 §3.1", false},
		{CHResourceMetadata, "challenge carries resource_metadata", Should, clauseMCPAuth + "§Protected Resource Metadata Discovery Requirements; RFC 9728 §5.1", false},
		{CHScope, "challenge carries scope", Should, clauseMCPAuth + "§Scope Selection Strategy", false},
		{CHNoOffline, "challenge scope has no offline_access", Should, "MCP 2026-07-28 auth §Refresh Tokens", false},

		{PRMDiscovery, "protected-resource metadata is discoverable", Must, clauseMCPAuth + "§Authorization Server Location; RFC 9728 §3", false},
		{PRMDocument, "metadata document: 200, application/json, bounded, strict JSON, RFC 9728 §2 members", Must, "RFC 9728 §2, §3.2", false},
		{PRMResource, "metadata resource is identical to the endpoint", Must, "RFC 9728 §3.3", false},
		{PRMAuthServers, "metadata names at least one authorization server", Must, clauseMCPAuth + "§Authorization Server Location", false},
		{PRMPathInserted, "path-inserted well-known URL serves the endpoint's metadata", Should, "RFC 9728 §3.1; " + clauseMCPAuth + "§Protected Resource Metadata Discovery Requirements", false},
		{PRMRoot, "root well-known URL, if served, names the origin", Should, "RFC 9728 §3.3", false},
		{PRMNoOffline, "scopes_supported has no offline_access", Should, "MCP 2026-07-28 auth §Refresh Tokens", false},
		{PRMHost, "metadata URLs are not derived from Host or X-Forwarded-*", Must, "RFC 9728 §3.3, §7.3", false},

		{ASMetadata, "authorization server metadata found in the MCP order", Must, clauseMCPAuth + "§Authorization Server Metadata Discovery; RFC 8414 §3", false},
		{ASIssuer, "issuer is identical to the one the URL was built from (mix-up)", Must, "RFC 8414 §3.3; OIDC Discovery §4.3", false},
		{ASRFC8414, "required members present, endpoints https", Must, "RFC 8414 §2; " + clauseMCPAuth + "§Communication Security", false},
		{ASPKCE, "PKCE S256 advertised", Must, clauseMCPAuth + "§Authorization Code Protection", false},
		{ASCIMD, "Client ID Metadata Documents supported", Should, clauseMCPAuth + "§Client ID Metadata Documents", false},
		{ASRegistration, "a client can register without pre-registration (CIMD or DCR)", May, clauseMCPAuth + "§Client Registration Approaches", false},

		{TOKGarbage, "garbage token refused with 401", Must, clauseMCPAuth + "§Token Handling; OAuth 2.1 §5.2", false},
		{TOKAlgNone, "alg:none token refused with 401", Must, clauseMCPAuth + "§Token Handling; RFC 8725 §3.1", false},
		{TOKUnknownKey, "token signed by an unknown key (right iss/aud) refused with 401", Must, clauseMCPAuth + "§Token Handling; RFC 9068 §4", false},
		{TOKExpired, "expired token refused with 401", Must, clauseMCPAuth + "§Token Handling (\"Invalid or expired tokens MUST receive a HTTP 401\")", false},
		{TOKWrongAud, "token for another audience refused with 401", Must, clauseMCPAuth + "§Token Audience Binding and Validation; RFC 8707 §2", false},
		{TOKHS256PubKey, "HS256 token keyed with the public key refused with 401", Must, "RFC 8725 §3.1, §3.2; RFC 9068 §4", false},
		{TOKOversized, "oversized token refused (401/400/413/431), promptly", Must, clauseMCPAuth + "§Token Handling", false},
		{TOKErrorCode, "401 for a bad token carries error=\"invalid_token\"", Should, "RFC 6750 §3, §3.1", false},

		{TRQueryToken, "token in the URL query refused", Must, clauseMCPAuth + "§Token Requirements (\"MUST NOT\" in the query string)", false},
		{TRDuplicateAuth, "two Authorization headers refused", Should, "RFC 6750 §3.1 (invalid_request); RFC 9110 §5.3", false},
		{TROrigin, "Origin of another site refused with 403", Must, "MCP Streamable HTTP §Security Warning", false},
		{TRHeaderMismatch, "Mcp-Method/Mcp-Name mismatch gets 400 -32020", Must, clauseMCPHTTP2026 + "§Server Validation", true},
		{TRMethods, "GET and DELETE get 405", Should, clauseMCPHTTP2026 + "§Backward Compatibility", true},
		{TRVersion, "unsupported protocol version gets 400 -32022", Must, "MCP 2026-07-28 basic §Error Codes", true},
		{TRMetaMissing, "missing _meta protocolVersion gets 400 -32602", Must, "MCP 2026-07-28 basic §_meta", true},

		{LeakErrorBody, "error answers do not leak internals", Should, "MCP security best practices; RFC 6750 §3 (error_description is for developers)", false},

		{CredAccepted, "the given token is accepted", Must, clauseMCPAuth + "§Token Handling", true},
		{StepUp, "refused tool gets 403 insufficient_scope with scope and resource_metadata in one challenge", Should, clauseMCPAuth + "§Runtime Insufficient Scope Errors", true},
		{StepUpBeforeRun, "a refused tool is refused before it runs", Must, clauseMCPAuth + "§Token Handling (\"validate access tokens before processing the request\")", true},
		{StepUpChallenge, "every 403 refusal carries a Bearer challenge", Must, "RFC 6750 §3", true},
		{StepUpBound, "repeated step-up for one scope set is bounded", May, clauseMCPAuth + "§Step-Up Authorization Flow (retry limits)", true},
		{SessionBinding, "a session is bound to the principal that created it", Must, "MCP security best practices §Session Hijacking", true},
		{TenantFromToken, "a tenant argument never overrides the token's tenant", Must, "MCP review contract §HTTP authorization; MCP elicitation (identity from the token)", true},

		{ProxyNoIdentity, "the upstream, called directly, refuses a request without the proxy's identity (none, or caller-set identity headers)", Must, "MCP security best practices §Token Passthrough (bypass of the proxy's controls)", false},
		{ProxyClientToken, "the upstream refuses the client's own token", Must, clauseMCPAuth + "§Access Token Privilege Restriction; §Token Passthrough", true},
		{ProxyForged, "the upstream refuses assertions without the proxy's signature (unknown key, alg:none)", Must, "RFC 9068 §4; RFC 8725 §3.1", false},
		{ProxyAudience, "the upstream refuses a proxy assertion for another audience, and accepts one for itself", Must, "RFC 9068 §4; RFC 8707 §2; " + clauseMCPAuth + "§Token Audience Binding and Validation", false},
		{ProxyMetadata, "the challenge and metadata name the public URL, never the upstream", Must, "RFC 9728 §3.3; " + clauseMCPAuth + "§Canonical Server URI", false},
	}
}

// checkInfo returns the catalog entry of id.
func checkInfo(id string) CheckInfo {
	for _, c := range Catalog() {
		if c.ID == id {
			return c
		}
	}
	return CheckInfo{ID: id, Title: id, Severity: May}
}
