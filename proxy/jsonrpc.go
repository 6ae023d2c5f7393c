package proxy

import (
	"net/http"
	"strconv"
)

// jsonrpcErrorCode is the JSON-RPC error code of every answer the proxy
// itself gives (a failed forward's 502, 503, 504, a rate limit's 429, the
// Host check's 403): -32603, internal error. The message is the HTTP
// status text; no upstream or request detail is ever included.
const jsonrpcErrorCode = -32603

// writeError answers status with a JSON-RPC error object carrying id,
// the request's JSON-RPC id as the middleware decided it may be echoed
// (middleware.Decision.ID), or null when id is nil.
func writeError(w http.ResponseWriter, id []byte, status int) {
	echo := "null"
	if id != nil {
		echo = string(id)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + echo + `,"error":{"code":` + strconv.Itoa(jsonrpcErrorCode) +
		`,"message":"` + http.StatusText(status) + `"}}` + "\n"))
}
