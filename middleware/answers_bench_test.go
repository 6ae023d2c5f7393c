package middleware

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// BenchmarkListAnswer: a tools/list answer of 1,000 tools (about 180 KiB
// of JSON, as an SDK writes it) through Middleware.Handler, filtered and
// annotated in annotate mode ("filtered"), against the same answer to a
// request whose JSON answer passes unread ("forwarded": ping). Both pay
// the same token check and body read; the ratio is the list layer's cost
// (docs/performance.md). "valid" is strictjson.Valid of the answer alone:
// one pass of the tokenizer, the least any strict read of it costs.
func BenchmarkListAnswer(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"tools":[`)
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		n := strconv.Itoa(i)
		sb.WriteString(`{"name":"tool_` + n + `","description":"Tool number ` + n + ` does something useful with its arguments.",` +
			`"inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":"integer"}},"required":["query"]}}`)
	}
	sb.WriteString(`]}}`)
	answer := []byte(sb.String())
	m := newFake(b, fakeValidator{claims: fakeClaims("mcp")}, func(c *Config) {
		c.Operations.Tools = map[string][]string{"tool_7": {"admin"}}
	})
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	b.Run("valid", func(b *testing.B) {
		b.ReportAllocs()
		start := dpopCPUTime()
		b.SetBytes(int64(len(answer)))
		for b.Loop() {
			if err := strictjson.Valid(answer); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, start)
	})
	for _, method := range []string{"ping", "tools/list"} {
		name := map[string]string{"ping": "forwarded", "tools/list": "filtered"}[method]
		reqBody := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `"}`)
		r := rpcRequest(legacyRev, method, "", "x")
		body := &rewindBody{}
		r.Body = body
		r.ContentLength = int64(len(reqBody))
		var out int
		dw := &countingWriter{h: http.Header{}, n: &out}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start := dpopCPUTime() // process CPU time: the machine may be shared
			b.SetBytes(int64(len(answer)))
			for b.Loop() {
				body.Reset(reqBody)
				clear(dw.h)
				out = 0
				h.ServeHTTP(dw, r)
				if out < len(answer)/2 {
					b.Fatalf("answer of %d bytes", out)
				}
			}
			reportCPU(b, start)
		})
	}
}

// countingWriter is a reusable ResponseWriter counting the body bytes.
type countingWriter struct {
	h http.Header
	n *int
}

func (c *countingWriter) Header() http.Header         { return c.h }
func (c *countingWriter) Write(p []byte) (int, error) { *c.n += len(p); return len(p), nil }
func (c *countingWriter) WriteHeader(int)             {}
