// Package audit checks a live MCP endpoint's authorization black-box,
// against the MCP authorization specification (2025-11-25 and 2026-07-28)
// and the RFCs it builds on. It is the engine of the `mcpguard audit` command (cmd/mcpguard).
//
//	a, err := audit.New(audit.Config{Endpoint: "https://mcp.example.com/mcp", CallTools: true})
//	rep, err := a.Run(ctx)
//	audit.WriteTable(os.Stdout, rep, false)
//
// Without credentials it checks the 401 challenge, protected-resource and
// authorization-server metadata, the refusal of forged tokens (alg none,
// an unknown key, expired, wrong audience, HS256 keyed with the public key,
// oversized), tokens in the query, duplicate Authorization headers,
// foreign Origins, and error bodies. With a token (Config.Token, or the
// client credentials grant) it adds the 2026-07-28 transport rules,
// per-tool step-up, that a refused tool never runs, the step-up bound,
// and, with a second principal's token, session binding and that a tenant
// argument cannot override the token's tenant. [Catalog] lists every check
// with its severity and the clause it enforces; docs/audit.md documents
// them.
//
// Every request is sequential, paced (Config.Interval), counted
// (Config.MaxRequests), bounded in time (Config.Timeout) and in the bytes
// read (Config.MaxBody). Redirects are followed only for GET, at most 3,
// and never off the origin of the request. Tokens never appear in the
// report: evidence lines name them by label.
package audit
