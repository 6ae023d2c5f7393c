package stdiobridge

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// hostileEnv makes the test binary a hand-written stdio "server" that
// misbehaves on request (hostileMain): each tools/call names what it
// does. Its value "sleeper" makes it a process that only sleeps.
const hostileEnv = "STDIOBRIDGE_HOSTILE"

// hostile is the state of hostileMain.
type hostile struct {
	wmu       sync.Mutex
	mu        sync.Mutex
	cancelled []string                 // requestIds of notifications/cancelled, raw
	answers   map[string]chan []byte   // the child's requests waiting for the client, by raw id
	waiting   map[string]chan struct{} // "wait" calls, by raw id
	released  chan struct{}            // closed by "release"
	notes     []string                 // methods of notifications received
}

func (h *hostile) line(s string) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_, _ = os.Stdout.WriteString(s + "\n")
}

func (h *hostile) answer(id json.RawMessage, text string) {
	q, _ := json.Marshal(text)
	h.line(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":` + string(q) + `}]}}`)
}

// hostileMain serves stdin until it ends.
func hostileMain() {
	if os.Getenv(hostileEnv) == "sleeper" {
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
		time.Sleep(time.Hour)
		return
	}
	h := &hostile{answers: map[string]chan []byte{}, waiting: map[string]chan struct{}{}, released: make(chan struct{})}
	r := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		raw, err := r.ReadBytes('\n')
		if err != nil {
			os.Exit(0)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
				RequestID json.RawMessage
			} `json:"params"`
		}
		if json.Unmarshal(raw, &m) != nil {
			h.line(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"unparsable input"}}`)
			continue
		}
		var pr struct {
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		_ = json.Unmarshal(raw, &pr)
		switch {
		case m.Method == "" && m.ID != nil: // a client's answer to a request of ours
			h.mu.Lock()
			ch := h.answers[string(m.ID)]
			h.mu.Unlock()
			if ch != nil {
				ch <- append([]byte(nil), raw...)
			}
		case m.ID == nil: // a notification
			h.mu.Lock()
			h.notes = append(h.notes, m.Method)
			if m.Method == "notifications/cancelled" {
				h.cancelled = append(h.cancelled, string(pr.Params.RequestID))
				if ch := h.waiting[string(pr.Params.RequestID)]; ch != nil {
					close(ch)
					delete(h.waiting, string(pr.Params.RequestID))
				}
			}
			h.mu.Unlock()
		case m.Method == "initialize":
			h.line(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}}`)
		case m.Method == "tools/call" && m.Params.Name == "flood_requests":
			// Requests to the client without end, and stdin never read again.
			for i := range argInt(m.Params.Arguments, "n", 20000) {
				h.line(`{"jsonrpc":"2.0","id":"r` + strconv.Itoa(i) + `","method":"roots/list"}`)
			}
			select {}
		case m.Method == "tools/call":
			go h.tool(m.ID, m.Params.Name, m.Params.Arguments)
		default:
			h.line(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`)
		}
	}
}

func argInt(args map[string]any, name string, def int) int {
	if v, ok := args[name].(float64); ok {
		return int(v)
	}
	return def
}

// tool does what tools/call name asks.
func (h *hostile) tool(id json.RawMessage, name string, args map[string]any) {
	switch name {
	case "pid":
		h.answer(id, strconv.Itoa(os.Getpid()))
	case "echo_id":
		h.answer(id, string(id))
	case "cwd":
		wd, _ := os.Getwd()
		h.answer(id, wd)
	case "client":
		h.answer(id, os.Getenv(EnvClient))
	case "env":
		h.answer(id, fmt.Sprintf("%q", os.Getenv(EnvSubject)))
	case "wrong_id":
		// An answer to a request it never got, then its own.
		h.line(`{"jsonrpc":"2.0","id":987654,"result":{"content":[{"type":"text","text":"forged"}]}}`)
		h.line(`{"jsonrpc":"2.0","id":"1","result":{"content":[{"type":"text","text":"forged"}]}}`)
		h.answer(id, "ok")
	case "twice":
		h.answer(id, "first")
		h.answer(id, "second")
	case "wait":
		ch := make(chan struct{})
		h.mu.Lock()
		h.waiting[string(id)] = ch
		h.mu.Unlock()
		select {
		case <-ch:
			h.answer(id, "answer after cancellation")
		case <-h.released:
			h.answer(id, "released")
		}
	case "release":
		h.mu.Lock()
		select {
		case <-h.released:
		default:
			close(h.released)
		}
		h.mu.Unlock()
		h.answer(id, "ok")
	case "cancels":
		h.mu.Lock()
		out := strings.Join(h.cancelled, ",")
		h.mu.Unlock()
		h.answer(id, out)
	case "notes":
		h.mu.Lock()
		out := strings.Join(h.notes, ",")
		h.mu.Unlock()
		h.answer(id, out)
	case "ask":
		// A request to the client with the id the test names (default: the
		// id of the request being served), answered with what came back.
		rid := string(id)
		if v, ok := args["id"].(string); ok {
			rid = v
		}
		ch := make(chan []byte, 1)
		h.mu.Lock()
		h.answers[rid] = ch
		h.mu.Unlock()
		h.line(`{"jsonrpc":"2.0","id":` + rid + `,"method":"elicitation/create","params":{"mode":"form","message":"name?","requestedSchema":{"type":"object","properties":{}}}}`)
		select {
		case got := <-ch:
			h.answer(id, strings.TrimSpace(string(got)))
		case <-time.After(time.Minute):
			h.answer(id, "no answer")
		}
	case "huge":
		n := argInt(args, "n", 1<<20)
		pad := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`
		h.line(pad + strings.Repeat("x", max(0, n-len(pad)-len(`"}}`))) + `"}}`)
		h.answer(id, "after huge")
	case "partial":
		h.wmu.Lock() // nothing else is written
		_, _ = os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + string(id) + `,`)
		select {}
	case "badutf8":
		h.line("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"\xff\xfe\"}}")
		h.answer(id, "after bad utf-8")
	case "bom":
		h.line("\ufeff" + `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"bom"}]}}`)
	case "crlf":
		h.wmu.Lock()
		_, _ = os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"crlf"}]}}` + "\r\n")
		h.wmu.Unlock()
	case "close_stdout":
		signal.Ignore(syscall.SIGTERM)
		h.wmu.Lock()
		_ = os.Stdout.Close()
		select {}
	case "ignore_term":
		signal.Ignore(syscall.SIGTERM)
		h.answer(id, strconv.Itoa(os.Getpid()))
	case "grandchild":
		// A grandchild in a session of its own (out of the child's process
		// group) holding stdout, then the child exits.
		exe, _ := os.Executable()
		cmd := exec.Command(exe)
		cmd.Env = []string{hostileEnv + "=sleeper", markEnv + "=" + os.Getenv(markEnv)}
		cmd.Stdout = os.Stdout
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			h.answer(id, "error "+err.Error())
			return
		}
		h.answer(id, strconv.Itoa(cmd.Process.Pid))
		h.wmu.Lock()
		os.Exit(0)
	case "flood":
		n, size := argInt(args, "n", 1000), argInt(args, "size", 10)
		data := strings.Repeat("f", size)
		if args["after"] == true { // answered first: no request in flight
			h.answer(id, "flooding")
		}
		for i := range n {
			h.line(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + data + strconv.Itoa(i) + `"}}`)
		}
		h.answer(id, "flooded")
	case "stderr_flood":
		chunk := strings.Repeat("e", 1<<20)
		for range argInt(args, "mb", 100) {
			_, _ = os.Stderr.WriteString(chunk)
		}
		_, _ = os.Stderr.WriteString("\nafter the flood\n")
		h.answer(id, "stderr flooded")
	case "stderr_lines":
		for i := range argInt(args, "n", 1000) {
			_, _ = fmt.Fprintf(os.Stderr, "stderr line %d\n", i)
		}
		h.answer(id, "stderr written")
	case "stderr_exit":
		for i := range argInt(args, "n", 1000) {
			_, _ = fmt.Fprintf(os.Stderr, "stderr line %d\n", i)
		}
		_, _ = os.Stderr.WriteString("last words on stderr\n")
		os.Exit(3)
	case "exit_buffered":
		h.wmu.Lock()
		_, _ = os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"last words"}]}}` + "\n")
		os.Exit(0)
	default:
		h.line(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32602,"message":"unknown tool"}}`)
	}
}
