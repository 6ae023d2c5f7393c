package proxy

import (
	"net/http"
	"strconv"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// jsonrpcErrorCode is the JSON-RPC error code of every answer the proxy
// itself gives (a failed forward's 502, 503, 504, a rate limit's 429, the
// Host check's 403): -32603, internal error. The message is the HTTP
// status text; no upstream or request detail is ever included.
const jsonrpcErrorCode = -32603

// maxEchoedID bounds the JSON-RPC id echoed in an error answer.
const maxEchoedID = 256

// writeError answers status with a JSON-RPC error object carrying the id
// of body's request, when body is one JSON-RPC request with an id.
func writeError(w http.ResponseWriter, body []byte, status int) {
	id := "null"
	if len(body) > 0 {
		_ = strictjson.Members(body, []string{"id"}, func(name, v []byte) error {
			if string(name) == "id" && len(v) > 0 && len(v) <= maxEchoedID && (v[0] == '"' || v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
				id = string(v)
			}
			return nil
		})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":` + strconv.Itoa(jsonrpcErrorCode) +
		`,"message":"` + http.StatusText(status) + `"}}` + "\n"))
}
