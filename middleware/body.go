package middleware

import "bytes"

// bodyReader is the request body handed downstream: the bytes read from
// the client, replayed unchanged. One allocation serves as io.ReadCloser.
type bodyReader struct{ bytes.Reader }

// Close implements io.Closer; the original body was already drained.
func (*bodyReader) Close() error { return nil }
