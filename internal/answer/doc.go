// Package answer reads and rewrites the answers of an MCP Streamable HTTP
// server on their way to the client, one JSON-RPC message at a time,
// without ever holding more than one message in memory. It is the one
// place in mcpguard that parses what a server sends back:
//
//   - the middleware uses it to bind tasks to their principal
//     (middleware/tasks.go: it records the tasks that answers create,
//     filters tasks/list answers and drops other principals' task status
//     notifications from every stream);
//   - list rewriting (tools/list, prompts/list, resources/list and their
//     templates: annotate or hide entries, issue 25) and `mcpguard proxy`
//     (issue 23) are meant to reuse it rather than parse answers again.
//
// Use it by wrapping the http.ResponseWriter given to the next handler:
//
//	var aw answer.Writer
//	aw.Reset(w, myRewriter, answer.Options{})
//	next.ServeHTTP(&aw, r)
//	err := aw.Finish() // always; err is for the log only
//
// A [Writer] decides what to do from the answer's status and headers when
// the handler writes them:
//
//   - Content-Type application/json (and no Content-Encoding): the body is
//     one JSON-RPC message. It is buffered, up to Options.MaxMessageBytes,
//     and handed to the [Rewriter] when the handler is done; the Writer
//     then writes the status, the headers (Content-Length corrected) and
//     the rewritten body.
//   - Content-Type text/event-stream (and no Content-Encoding): the body
//     is a stream of server-sent events (HTML Living Standard §9.2). The
//     Writer splits it into events as the handler writes, holding at most
//     the one incomplete event, and passes each event's data (the JSON-RPC
//     message) to the Rewriter as soon as the event is complete; what the
//     handler flushes is flushed as far as complete events go. So a
//     long-lived GET stream is filtered live and never buffered whole.
//   - anything else passes through untouched, unless Options.RefuseOther
//     is set, in which case an answer with a body is replaced by 502.
//
// With Options.SSEOnly a JSON answer passes untouched too, for callers
// that only filter what a stream carries besides the response (the
// middleware's notification filter on every request).
//
// The Rewriter returns the message unchanged (kept byte for byte), other
// bytes (replaced), or nil (dropped). A JSON answer that is dropped, that
// the Rewriter fails on, or that exceeds the bound is replaced by a 502
// "Bad Gateway" answer (text/plain), so that nothing unchecked reaches the
// client. An SSE event that is dropped, failed on or too large is removed
// from the stream (its "id" and "retry" fields are kept, so the client's
// Last-Event-ID stays right) and the stream goes on. [Writer.Finish]
// returns the first such failure, for the log.
//
// The event grammar is the standard's: lines end with CRLF, LF or CR (also
// split across writes), one leading U+FEFF is ignored, a line starting
// with ":" is a comment, a field's value loses one leading space, and the
// data of an event is its "data" lines joined with LF. An incomplete event
// at the end of the answer is dropped, as clients drop it. Parsing the
// messages themselves ([Parse], [Elements]) goes through internal/strictjson,
// the module's one JSON reader.
package answer
