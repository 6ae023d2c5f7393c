// Package clientrecord is the stored form of a cimd.Client, shared by the
// stores of the module (cimd's in-memory store for tests, cimd/boltstore,
// redisstore and devas): compact JSON, not HTML-escaped, at most
// [MaxBytes]. It imports the standard library only, so that cimd can use
// it too.
package clientrecord

import (
	"bytes"
	"encoding/json"
)

// MaxBytes caps one stored client: twice the 16 KiB default cap of a
// registration request (cimd.DCRConfig.MaxBodyBytes), so that only a
// raised cap (or pathological content) reaches it.
const MaxBytes = 2 * 16 << 10

// Marshal is json.Marshal without HTML escaping, so that a record is no
// larger than the metadata it holds ('<', '>' and '&' stay one byte).
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Unmarshal decodes a record that Marshal produced, which the store
// read back from where mcpguard itself wrote it: not untrusted input, so
// encoding/json rather than internal/strictjson.
func Unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
