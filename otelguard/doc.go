// Package otelguard reports mcpguard's authorization to OpenTelemetry:
// metrics of decisions, token validation, key refreshes, introspection
// and step-up, and spans for the authorization decision with child spans
// for the key refreshes and introspection calls it causes. The core
// packages do not import OpenTelemetry: they expose small observer hooks
// (middleware.Config.OnDecision, validate.Config.Observer,
// jwks.Config.Observer, introspect.Config.Observer), nil by default and
// then free, and this package implements them. A program that does not
// import otelguard does not link OpenTelemetry.
//
//	tel, err := otelguard.New(otelguard.Config{MeterProvider: mp, TracerProvider: tp})
//	if err != nil { … }
//	cfg := mcpguard.Config{Resource: "https://mcp.example.com/mcp", Issuers: []string{"https://auth.example.com"}}
//	tel.Instrument(&cfg)
//	g, err := mcpguard.New(cfg)
//	if err != nil { … }
//	tel.Mount(mux, g, mcpHandler) // g.Mount, with the decision span
//
// # Metrics
//
// Every attribute comes from a bounded set: the middleware.Decision
// labels (reason codes, the MCP methods and the tool, prompt and resource
// names the policy lists, "(unlisted)" otherwise), configured issuers, and
// fixed outcome codes. Subjects, client ids and tokens never are
// attributes.
//
//	mcpguard.decisions              counter    outcome, reason, http status (refusals), mcp.method.name, operation name, protocol version
//	mcpguard.stepup.challenges      counter    mcp.method.name, operation name: 403 insufficient_scope with a challenge
//	mcpguard.stepup.exhausted       counter    mcp.method.name, operation name: the terminal 403 past the step-up bound
//	mcpguard.validation.duration    histogram  seconds; token cache (hit, miss, off), result (ok or a validate error code)
//	mcpguard.token_cache.lookups    counter    result: hit or miss
//	mcpguard.jwks.refreshes         counter    issuer, outcome (success, failure), cause (jwks.Cause), trigger (background, on_demand)
//	mcpguard.jwks.refresh.duration  histogram  seconds; issuer, outcome
//	mcpguard.jwks.keys              gauge      issuer: usable keys served
//	mcpguard.jwks.age               gauge      seconds; issuer: age of the served key set
//	mcpguard.introspection.calls    counter    issuer, outcome (introspect.Outcome)
//	mcpguard.introspection.duration histogram  seconds; issuer, outcome
//
// # Traces
//
// [Telemetry.Handler] (or [Telemetry.Mount]) starts the span
// "mcpguard.authorize" around the middleware, as a child of the span in
// the request's context (otelhttp's, for instance) or, when there is
// none, of the trace context the request carries (Config.Propagator); the
// decision ends it, so it covers the checks, not the MCP handler. Its
// attributes are the decision event's (docs/operations.md, "Decision
// events"): the labels, the issuer, subject ("user.id"), client and tenant
// of a valid token, the session, the SHA-256 of the arguments and the
// rule; never a token, the arguments or another claim value. A decision
// of a request not served through Handler is added, with the same
// attributes, as the event "mcpguard.decision" on the request context's
// span when it records. Key
// refreshes ("mcpguard.jwks.refresh") that a request starts and
// introspection calls ("mcpguard.introspect") are its children;
// background refreshes are root spans.
package otelguard
