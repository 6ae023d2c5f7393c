package middleware

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpguard/mcpguard/internal/mcprev"
)

// Canonical header keys (net/http canonicalizes incoming names).
const (
	hdrProtocolVersion = "Mcp-Protocol-Version"
	hdrMethod          = "Mcp-Method"
	hdrName            = "Mcp-Name"
)

var (
	errVersionRepeated = fmt.Errorf("%w: MCP-Protocol-Version repeated", errHeaderMismatch)
	errVersionMismatch = fmt.Errorf("%w: MCP-Protocol-Version differs from _meta", errHeaderMismatch)
	errMethodMissing   = fmt.Errorf("%w: Mcp-Method missing", errHeaderMismatch)
	errMethodMismatch  = fmt.Errorf("%w: Mcp-Method differs from method", errHeaderMismatch)
	errNameMissing     = fmt.Errorf("%w: Mcp-Name missing", errHeaderMismatch)
	errNameMismatch    = fmt.Errorf("%w: Mcp-Name differs from params", errHeaderMismatch)
	errHeaderRepeated  = fmt.Errorf("%w: Mcp-Method or Mcp-Name repeated", errHeaderMismatch)
)

// isModern reports whether the request's MCP-Protocol-Version names
// 2026-07-28 or a later date. An absent or older version is legacy; an
// absent header is treated as pre-2026 (MCP 2026-07-28 §Request Metadata
// allows a server that supports old clients to assume 2025-03-26).
func isModern(h http.Header) bool {
	for _, v := range h[hdrProtocolVersion] {
		if mcprev.IsModern(v) {
			return true
		}
	}
	return false
}

// checkHeaders compares the MCP request headers with the JSON-RPC message
// (MCP 2026-07-28 Streamable HTTP §Server Validation):
//
//   - any revision: each of MCP-Protocol-Version, Mcp-Method and Mcp-Name
//     appears at most once; a protocolVersion in params._meta equals the
//     MCP-Protocol-Version header; a present Mcp-Method equals "method";
//     a present Mcp-Name equals params.name (tools/call, prompts/get) or
//     params.uri (resources/read) after decoding the =?base64?…?= form.
//   - 2026-07-28 and later, for requests (a "method" and an "id"): the body
//     has _meta protocolVersion (else errMissingMeta: 400, -32602), and
//     Mcp-Method is present, as is Mcp-Name for tools/call, prompts/get and
//     resources/read.
//
// Header values are case-sensitive; net/http has already trimmed OWS.
// Mcp-Param-* headers need the tools' input schemas and are left to the
// MCP server.
func checkHeaders(h http.Header, msg *message) error {
	vers, methods, names := h[hdrProtocolVersion], h[hdrMethod], h[hdrName]
	if len(vers) > 1 {
		return errVersionRepeated
	}
	if len(methods) > 1 || len(names) > 1 {
		return errHeaderRepeated
	}
	if msg.version.present && (len(vers) == 0 || vers[0] != string(msg.version.v)) {
		return errVersionMismatch
	}
	var want []byte
	var hasWant, needsName bool
	switch {
	case !msg.method.present:
	case string(msg.method.v) == methodToolsCall, string(msg.method.v) == methodPromptsGet:
		needsName, want, hasWant = true, msg.name.v, msg.name.str
	case string(msg.method.v) == methodResourceRead:
		needsName, want, hasWant = true, msg.uri.v, msg.uri.str
	}
	if len(vers) == 1 && mcprev.IsModern(vers[0]) && msg.method.present && (msg.id != nil) {
		switch {
		case !msg.version.present:
			return errMissingMeta
		case len(methods) == 0:
			return errMethodMissing
		case needsName && len(names) == 0:
			return errNameMissing
		}
	}
	if len(methods) == 1 && (!msg.method.present || methods[0] != string(msg.method.v) || !isHeaderSafe(methods[0])) {
		return errMethodMismatch
	}
	if len(names) == 1 && needsName {
		got, ok := decodeHeaderValue(names[0])
		if !ok || !hasWant || got != string(want) {
			return errNameMismatch
		}
	}
	return nil
}

// decodeHeaderValue decodes an Mcp-Name or Mcp-Param-* value: the
// =?base64?{standard base64 of UTF-8}?= form (markers case-sensitive,
// padding optional), or a plain value of visible ASCII, SP and HTAB
// (MCP 2026-07-28 §Value Encoding).
func decodeHeaderValue(v string) (string, bool) {
	const pre, suf = "=?base64?", "?="
	if strings.HasPrefix(v, pre) && strings.HasSuffix(v, suf) && len(v) >= len(pre)+len(suf) {
		enc := v[len(pre) : len(v)-len(suf)]
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(enc); err != nil {
				return "", false
			}
		}
		return string(b), true
	}
	if !isHeaderSafe(v) {
		return "", false
	}
	return v, true
}

// isHeaderSafe reports whether v has only visible ASCII, SP and HTAB.
func isHeaderSafe(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c != '\t' && (c < 0x20 || c > 0x7e) {
			return false
		}
	}
	return true
}
