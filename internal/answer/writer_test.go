package answer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// rewriteFunc adapts a function to Rewriter.
type rewriteFunc func([]byte) ([]byte, error)

func (f rewriteFunc) Rewrite(msg []byte) ([]byte, error) { return f(msg) }

var (
	identity = rewriteFunc(func(m []byte) ([]byte, error) { return m, nil })
	dropAll  = rewriteFunc(func([]byte) ([]byte, error) { return nil, nil })
	errBoom  = errors.New("boom")
)

// dropSecret drops messages mentioning "secret", replaces "old" by "new"
// and keeps the rest.
var dropSecret = rewriteFunc(func(m []byte) ([]byte, error) {
	switch {
	case bytes.Contains(m, []byte("secret")):
		return nil, nil
	case bytes.Contains(m, []byte("boom")):
		return nil, errBoom
	case bytes.Contains(m, []byte("old")):
		return bytes.ReplaceAll(m, []byte("old"), []byte("new")), nil
	}
	return m, nil
})

// tooLarge is an OversizeAnswerer giving msg.
type tooLarge string

func (m tooLarge) OversizeMessage() []byte { return []byte(m) }

// serve runs handler behind a Writer with rw and opts, and returns the
// recorded answer and Finish's error.
func serve(t *testing.T, rw Rewriter, opts Options, handler func(http.ResponseWriter)) (*httptest.ResponseRecorder, error) {
	t.Helper()
	rec := httptest.NewRecorder()
	var w Writer
	w.Reset(rec, rw, opts)
	handler(&w)
	return rec, w.Finish()
}

func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rw         Rewriter
		opts       Options
		header     map[string]string
		status     int
		body       string
		wantStatus int
		wantBody   string
		wantCL     string
		wantErr    error
	}{
		{name: "kept", rw: dropSecret, body: `{"result":{}}`, wantStatus: 200, wantBody: `{"result":{}}`},
		{name: "replaced", rw: dropSecret, body: `{"result":"old"}`, wantStatus: 200, wantBody: `{"result":"new"}`},
		{name: "content-length fixed", rw: dropSecret, header: map[string]string{"Content-Length": "16"}, body: `{"result":"old"}`,
			wantStatus: 200, wantBody: `{"result":"new"}`, wantCL: "16"},
		{name: "status kept", rw: dropSecret, status: 400, body: `{"error":{}}`, wantStatus: 400, wantBody: `{"error":{}}`},
		{name: "dropped", rw: dropSecret, body: `{"result":"secret"}`, wantStatus: 502, wantBody: "Bad Gateway\n", wantErr: ErrDropped},
		{name: "rewrite error", rw: dropSecret, body: `{"result":"boom"}`, wantStatus: 502, wantBody: "Bad Gateway\n", wantErr: errBoom},
		{name: "too large", rw: identity, opts: Options{MaxMessageBytes: 8}, body: `{"result":{}}`, wantStatus: 502, wantBody: "Bad Gateway\n", wantErr: ErrTooLarge},
		{name: "empty body", rw: dropAll, status: 202, wantStatus: 202},
		{name: "media type parameters", rw: dropSecret, header: map[string]string{"Content-Type": "Application/JSON; charset=utf-8"},
			body: `{"result":"old"}`, wantStatus: 200, wantBody: `{"result":"new"}`},
		{name: "gzip refused", rw: identity, header: map[string]string{"Content-Encoding": "gzip"}, body: "\x1f\x8b",
			wantStatus: 502, wantBody: "Bad Gateway\n", wantErr: ErrUnreadable},
		{name: "identity encoding read", rw: dropSecret, header: map[string]string{"Content-Encoding": "identity"}, body: `"old"`,
			wantStatus: 200, wantBody: `"new"`},
		{name: "substring type refused", rw: identity, header: map[string]string{"Content-Type": "text/plain; x=application/json"},
			body: `{}`, wantStatus: 502, wantBody: "Bad Gateway\n", wantErr: ErrUnreadable},
		{name: "json suffix type refused", rw: identity, header: map[string]string{"Content-Type": "application/problem+json"},
			body: `{}`, wantStatus: 502, wantBody: "Bad Gateway\n", wantErr: ErrUnreadable},
		{name: "other passes", rw: dropAll, header: map[string]string{"Content-Type": "text/plain"}, status: 405,
			body: "Method Not Allowed\n", wantStatus: 405, wantBody: "Method Not Allowed\n"},
		{name: "no type passes", rw: dropAll, header: map[string]string{"Content-Type": ""}, body: "x", wantStatus: 200, wantBody: "x"},
		{name: "other refused", rw: dropAll, opts: Options{RefuseOther: true}, header: map[string]string{"Content-Type": "text/plain"},
			status: 404, body: "nope\n", wantStatus: 502, wantBody: "Bad Gateway\n", wantErr: ErrUnreadable},
		{name: "SSEOnly passes JSON", rw: dropAll, opts: Options{SSEOnly: true}, body: `{"result":"secret"}`, wantStatus: 200, wantBody: `{"result":"secret"}`},
		{name: "SSEOnly passes gzip JSON", rw: dropAll, opts: Options{SSEOnly: true}, header: map[string]string{"Content-Encoding": "gzip"}, body: "\x1f\x8b",
			wantStatus: 200, wantBody: "\x1f\x8b"},
		{name: "SSEOnly refuses gzip SSE", rw: identity, opts: Options{SSEOnly: true, RefuseOther: true}, header: map[string]string{"Content-Type": "text/event-stream", "Content-Encoding": "gzip"},
			body: "\x1f\x8b", wantStatus: 502, wantBody: "Bad Gateway\n", wantErr: ErrUnreadable},
		{name: "SSEOnly refuses event-stream lookalike", rw: identity, opts: Options{SSEOnly: true}, header: map[string]string{"Content-Type": "text/plain; x=text/event-stream"},
			body: "data: x\n\n", wantStatus: 502, wantBody: "Bad Gateway\n", wantErr: ErrUnreadable},
		{name: "SSEOnly ignores RefuseOther", rw: dropAll, opts: Options{SSEOnly: true, RefuseOther: true}, header: map[string]string{"Content-Type": "text/plain"},
			status: 405, body: "no\n", wantStatus: 405, wantBody: "no\n"},
		{name: "other refused, no body", rw: dropAll, opts: Options{RefuseOther: true}, header: map[string]string{"Content-Type": "text/plain"},
			status: 204, wantStatus: 204},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := serve(t, tc.rw, tc.opts, func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				for k, v := range tc.header {
					if v == "" {
						w.Header().Del(k)
						continue
					}
					w.Header().Set(k, v)
				}
				if tc.status != 0 {
					w.WriteHeader(tc.status)
				}
				for i := 0; i < len(tc.body); i += 3 { // several writes
					_, _ = io.WriteString(w, tc.body[i:min(i+3, len(tc.body))])
				}
			})
			if rec.Code != tc.wantStatus || rec.Body.String() != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body, tc.wantStatus, tc.wantBody)
			}
			if cl := rec.Header().Get("Content-Length"); cl != tc.wantCL {
				t.Errorf("Content-Length %q, want %q", cl, tc.wantCL)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("Finish: %v, want %v", err, tc.wantErr)
			}
			if tc.wantStatus == 502 && rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Errorf("502 Content-Type %q", rec.Header().Get("Content-Type"))
			}
		})
	}
}

func TestSSE(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rw      Rewriter
		opts    Options
		in      string
		want    string
		wantErr error
	}{
		{name: "kept byte for byte", rw: dropSecret, in: "id: 1\nevent: message\ndata: {\"a\":1}\n\n: ping\n\n", want: "id: 1\nevent: message\ndata: {\"a\":1}\n\n: ping\n\n"},
		{name: "CRLF kept", rw: dropSecret, in: "data: a\r\n\r\ndata: b\r\n\r\n", want: "data: a\r\n\r\ndata: b\r\n\r\n"},
		{name: "CR kept", rw: dropSecret, in: "data: a\r\rdata: b\r\r", want: "data: a\r\rdata: b\r\r"},
		{name: "dropped keeps id and retry", rw: dropSecret, in: "id: 7\nretry: 10\ndata: secret\n\ndata: ok\n\n", want: "id: 7\nretry: 10\n\ndata: ok\n\n"},
		{name: "dropped without id", rw: dropSecret, in: "event: message\ndata: secret\n\ndata: ok\n\n", want: "data: ok\n\n"},
		{name: "rewrite error drops", rw: dropSecret, in: "id: 1\ndata: boom\n\ndata: ok\n\n", want: "id: 1\n\ndata: ok\n\n", wantErr: errBoom},
		{name: "replaced", rw: dropSecret, in: "id: 2\r\nevent: message\r\ndata: old\r\n\r\n", want: "id: 2\nevent: message\ndata: new\n\n"},
		{name: "multi-line data joined", rw: dropSecret, in: "data: {\"a\":\ndata: \"old\"}\nid: 3\n\n", want: "data: {\"a\":\ndata: \"new\"}\nid: 3\n\n"},
		{name: "secret across data lines", rw: dropSecret, in: "data: sec\ndata:ret\n\n", want: "data: sec\ndata:ret\n\n"}, // joined: "sec\nret"
		{name: "secret in second data line", rw: dropSecret, in: "data: x\ndata:secret\n\n", want: ""},
		{name: "field without space", rw: dropSecret, in: "data:secret\n\n", want: ""},
		{name: "field without colon is empty data", rw: dropSecret, in: "data\n\n", want: "data\n\n"},
		{name: "BOM stripped for reading", rw: dropSecret, in: "\xEF\xBB\xBFdata: secret\n\ndata: ok\n\n", want: "data: ok\n\n"},
		{name: "BOM kept when kept", rw: dropSecret, in: "\xEF\xBB\xBFdata: ok\n\n", want: "\xEF\xBB\xBFdata: ok\n\n"},
		{name: "second BOM is content", rw: dropSecret, in: "data: a\n\n\xEF\xBB\xBFdata: secret\n\n", want: "data: a\n\n\xEF\xBB\xBFdata: secret\n\n"},
		{name: "BOM then blank line", rw: dropSecret, in: "\xEF\xBB\xBF\ndata: secret\n\n", want: "\xEF\xBB\xBF\n"},
		{name: "partial BOM is content", rw: dropSecret, in: "\xEF\xBB\ndata: secret\n\n", want: ""},
		{name: "incomplete last event dropped", rw: dropSecret, in: "data: a\n\ndata: b\n", want: "data: a\n\n"},
		{name: "comment only", rw: dropAll, in: ":hi\n\n", want: ":hi\n\n"},
		{name: "event too large skipped", rw: identity, opts: Options{MaxMessageBytes: 16}, in: "data: 0123456789abcdef\n\ndata: ok\n\n", want: "data: ok\n\n", wantErr: ErrTooLarge},
		{name: "last event too large ends with the oversize message", rw: identity, opts: Options{MaxMessageBytes: 16, Oversize: tooLarge("E")},
			in: "data: ok\n\nid: 9\ndata: 0123456789abcdef\n\n", want: "data: ok\n\ndata: E\n\n", wantErr: ErrTooLarge},
		{name: "stream ending inside a too large event", rw: identity, opts: Options{MaxMessageBytes: 16, Oversize: tooLarge("E")},
			in: "data: ok\r\rdata: 0123456789abcdef", want: "data: ok\r\rdata: E\n\n", wantErr: ErrTooLarge},
		{name: "too large event followed by a message", rw: identity, opts: Options{MaxMessageBytes: 16, Oversize: tooLarge("E")},
			in: "data: 0123456789abcdef\n\ndata: ok\n\n: bye\n\n", want: "data: ok\n\n: bye\n\n", wantErr: ErrTooLarge},
		{name: "too large event followed by a comment", rw: identity, opts: Options{MaxMessageBytes: 16, Oversize: tooLarge("E")},
			in: "data: 0123456789abcdef\n\n: bye\n\n", want: ": bye\n\ndata: E\n\n", wantErr: ErrTooLarge},
		{name: "too large last event, nothing to add", rw: identity, opts: Options{MaxMessageBytes: 16, Oversize: tooLarge("")},
			in: "data: 0123456789abcdef\n\n", want: "", wantErr: ErrTooLarge},
		{name: "oversize message with a newline refused", rw: identity, opts: Options{MaxMessageBytes: 16, Oversize: tooLarge("a\nb")},
			in: "data: 0123456789abcdef\n\n", want: "", wantErr: ErrTooLarge},
		{name: "no event too large, nothing added", rw: identity, opts: Options{MaxMessageBytes: 16, Oversize: tooLarge("E")},
			in: "data: ok\n\n", want: "data: ok\n\n"},
		{name: "replaced message with newlines", rw: rewriteFunc(func([]byte) ([]byte, error) { return []byte("a\nb\r\nc"), nil }),
			in: "data: x\n\n", want: "data: a\ndata: b\ndata: c\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunk := range []int{1, 2, 3, 7, 1 << 20} {
				rec, err := serve(t, tc.rw, tc.opts, func(w http.ResponseWriter) {
					w.Header().Set("Content-Type", "text/event-stream")
					w.Header().Set("Content-Length", "999")
					for i := 0; i < len(tc.in); i += chunk {
						_, _ = io.WriteString(w, tc.in[i:min(i+chunk, len(tc.in))])
					}
				})
				if got := rec.Body.String(); got != tc.want {
					t.Errorf("chunks of %d: got %q, want %q", chunk, got, tc.want)
				}
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("chunks of %d: Finish: %v, want %v", chunk, err, tc.wantErr)
				}
				if cl := rec.Header().Get("Content-Length"); cl != "" {
					t.Errorf("Content-Length %q kept", cl)
				}
			}
		})
	}
}

// TestSSEFlushedLive checks that each complete event reaches the client
// when the handler flushes, while the handler is still running, over real
// HTTP on loopback.
func TestSSEFlushedLive(t *testing.T) {
	next := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var w Writer
		w.Reset(rw, dropSecret, Options{})
		defer func() { _ = w.Finish() }()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i, ev := range []string{"data: secret\n\n", "data: one\n\n", "data: old\n\n", "data: par"} {
			_, _ = io.WriteString(&w, ev)
			w.Flush()
			if i == 3 {
				break
			}
			select {
			case <-next:
			case <-time.After(5 * time.Second):
				return
			}
		}
	}))
	defer ts.Close()
	resp, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	read := func(want string) {
		t.Helper()
		buf := make([]byte, len(want))
		done := make(chan error, 1)
		go func() { _, err := io.ReadFull(resp.Body, buf); done <- err }()
		select {
		case err := <-done:
			if err != nil || string(buf) != want {
				t.Fatalf("read %q, %v; want %q", buf, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no event within 5s, want %q", want)
		}
	}
	next <- struct{}{} // the secret event is dropped
	read("data: one\n\n")
	next <- struct{}{}
	read("data: new\n\n")
	next <- struct{}{}
	rest, _ := io.ReadAll(resp.Body)
	if len(rest) != 0 {
		t.Errorf("after the last complete event: %q, want nothing", rest)
	}
}

// statusLog records the statuses written.
type statusLog struct {
	*httptest.ResponseRecorder
	codes []int
}

func (s *statusLog) WriteHeader(code int) {
	s.codes = append(s.codes, code)
	if code >= 200 {
		s.ResponseRecorder.WriteHeader(code)
	}
}

func TestInformationalAndFinish(t *testing.T) {
	rec := &statusLog{ResponseRecorder: httptest.NewRecorder()}
	var aw Writer
	aw.Reset(rec, identity, Options{})
	aw.Header().Set("Content-Type", "application/json")
	aw.WriteHeader(http.StatusEarlyHints)
	aw.WriteHeader(http.StatusCreated)
	aw.WriteHeader(http.StatusTeapot) // superfluous
	_, _ = io.WriteString(&aw, `{}`)
	err := aw.Finish()
	if err != nil || fmt.Sprint(rec.codes) != "[103 201]" || rec.Body.String() != `{}` {
		t.Errorf("got %v %q %v", rec.codes, rec.Body, err)
	}
	var w Writer
	w.Reset(httptest.NewRecorder(), identity, Options{})
	_ = w.Finish()
	if _, err := w.Write([]byte("x")); !errors.Is(err, ErrFinished) {
		t.Errorf("Write after Finish: %v, want ErrFinished", err)
	}
}

// TestReuse checks that a reset Writer carries nothing over.
func TestReuse(t *testing.T) {
	var w Writer
	for i, tc := range []struct{ ct, in, want string }{
		{"text/event-stream", "\xEF\xBB\xBFdata: a\n\ndata: b", "\xEF\xBB\xBFdata: a\n\n"},
		{"text/event-stream", "data: c\n\n", "data: c\n\n"},
		{"application/json", `{"x":1}`, `{"x":1}`},
	} {
		rec := httptest.NewRecorder()
		w.Reset(rec, identity, Options{})
		w.Header().Set("Content-Type", tc.ct)
		_, _ = io.WriteString(&w, tc.in)
		if err := w.Finish(); err != nil || rec.Body.String() != tc.want {
			t.Errorf("%d: got %q %v, want %q", i, rec.Body, err, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Message
		wantErr  error
	}{
		{"notification", `{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t"}}`,
			Message{Method: []byte("notifications/tasks/status"), HasMethod: true, Params: []byte(`{"taskId":"t"}`)}, nil},
		{"escaped method", `{"method":"notifications\/tasks\u002fstatus"}`,
			Message{Method: []byte("notifications/tasks/status"), HasMethod: true}, nil},
		{"response", `{"jsonrpc":"2.0","id":1,"result":{"tasks":[]}}`, Message{ID: []byte("1"), Result: []byte(`{"tasks":[]}`)}, nil},
		{"method not string", `{"method":1}`, Message{}, ErrInvalid},
		{"case variant", `{"method":"a","Method":"b"}`, Message{}, ErrInvalid},
		{"duplicate", `{"id":1,"id":2}`, Message{}, ErrInvalid},
		{"array", `[{"method":"a"}]`, Message{}, ErrInvalid},
		{"not JSON", `{"method"`, Message{}, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Message
			err := Parse(nil, []byte(tc.in), &m)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if string(m.Method) != string(tc.want.Method) || m.HasMethod != tc.want.HasMethod || string(m.ID) != string(tc.want.ID) ||
				string(m.Params) != string(tc.want.Params) || string(m.Result) != string(tc.want.Result) {
				t.Errorf("got %+v, want %+v", m, tc.want)
			}
		})
	}
}

func TestMemberSpliceFilter(t *testing.T) {
	doc := []byte(`{"tasks":[{"taskId":"a"},{"taskId":"b"}, {"taskId":"c"}],"nextCursor":"x"}`)
	v, start, end, ok, err := Member(nil, doc, []string{"tasks", "nextCursor"}, "tasks")
	if err != nil || !ok {
		t.Fatalf("Member: %v %v", ok, err)
	}
	arr, removed, err := FilterArray(v, func(e []byte) (bool, error) { return !strings.Contains(string(e), `"b"`), nil })
	if err != nil || !removed {
		t.Fatalf("FilterArray: %v %v", removed, err)
	}
	got := string(Splice(doc, start, end, arr))
	if want := `{"tasks":[{"taskId":"a"},{"taskId":"c"}],"nextCursor":"x"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, _, _, _, err := Member(nil, []byte(`{"tasks":1,"Tasks":2}`), []string{"tasks"}, "tasks"); !errors.Is(err, ErrInvalid) {
		t.Errorf("case variant: %v, want ErrInvalid", err)
	}
	if _, _, err := FilterArray([]byte(`{}`), nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("not an array: %v", err)
	}
}

// writeLog records the writes to the underlying writer.
type writeLog struct {
	*httptest.ResponseRecorder
	writes []string
}

func (l *writeLog) Write(p []byte) (int, error) {
	l.writes = append(l.writes, string(p))
	return l.ResponseRecorder.Write(p)
}

// TestSSEWritesCoalesced checks that the events of one write kept as read
// go on in one write, around a dropped or a rebuilt one, and that events
// with a CR, an incomplete one or one split across writes still come out
// whole.
func TestSSEWritesCoalesced(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     []string
		writes []string
	}{
		{"kept run", []string{"data: a\n\ndata: b\n\n: c\n\n\n"}, []string{"data: a\n\ndata: b\n\n: c\n\n\n"}},
		{"around a dropped one", []string{"data: a\n\nid: 7\ndata: secret\n\ndata: b\n\ndata: c\n\n"},
			[]string{"data: a\n\n", "id: 7\n\n", "data: b\n\ndata: c\n\n"}},
		{"a CR", []string{"data: a\n\ndata: b\r\n\r\ndata: c\n\n"}, []string{"data: a\n\n", "data: b\r\n\r", "\n", "data: c\n\n"}},
		{"split", []string{"data: a\n\ndata: ", "b\n\ndata: c\n\ndata: d"}, []string{"data: a\n\n", "data: b\n\n", "data: c\n\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &writeLog{ResponseRecorder: httptest.NewRecorder()}
			var w Writer
			w.Reset(rec, dropSecret, Options{})
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			// The stream's first line is read byte-wise (a BOM).
			if _, err := io.WriteString(&w, ": hi\n\n"); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.in {
				if _, err := io.WriteString(&w, s); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Finish(); err != nil {
				t.Fatal(err)
			}
			if want := append([]string{": hi\n\n"}, tc.writes...); !slices.Equal(rec.writes, want) {
				t.Errorf("writes %q, want %q", rec.writes, want)
			}
		})
	}
}

// unwrapOnly is a ResponseWriter that is no http.Flusher itself but
// unwraps to one, as Caddy's wrappers do.
type unwrapOnly struct{ w http.ResponseWriter }

func (u unwrapOnly) Header() http.Header         { return u.w.Header() }
func (u unwrapOnly) Write(b []byte) (int, error) { return u.w.Write(b) }
func (u unwrapOnly) WriteHeader(code int)        { u.w.WriteHeader(code) }
func (u unwrapOnly) Unwrap() http.ResponseWriter { return u.w }

// TestFlushThroughUnwrap: Flush reaches the flusher below a writer that
// only unwraps to it, so that an SSE answer's headers go out before its
// first event (a GET stream behind Caddy hung without them).
func TestFlushThroughUnwrap(t *testing.T) {
	rec := httptest.NewRecorder()
	var w Writer
	w.Reset(unwrapOnly{rec}, identity, Options{})
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.Flush()
	if !rec.Flushed {
		t.Error("Flush did not reach the recorder below the wrapper")
	}
}
