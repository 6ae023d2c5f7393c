package answer_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/mcpguard/mcpguard/internal/answer"
)

// dropNotifications keeps responses and drops every notification.
type dropNotifications struct{}

func (dropNotifications) Rewrite(msg []byte) ([]byte, error) {
	var m answer.Message
	if err := answer.Parse(nil, msg, &m); err != nil {
		return nil, err // unreadable: dropped
	}
	if m.HasMethod && m.ID == nil {
		return nil, nil
	}
	return msg, nil
}

// An SSE answer is rewritten event by event, as the handler writes it.
func ExampleWriter() {
	server := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tasks/status\",\"params\":{\"taskId\":\"t1\"}}\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n")
	})
	rec := httptest.NewRecorder()
	var aw answer.Writer
	aw.Reset(rec, dropNotifications{}, answer.Options{})
	server.ServeHTTP(&aw, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	if err := aw.Finish(); err != nil {
		fmt.Println("error:", err)
	}
	fmt.Print(rec.Body.String())
	// Output:
	// id: 1
	//
	// id: 2
	// data: {"jsonrpc":"2.0","id":7,"result":{}}
}
