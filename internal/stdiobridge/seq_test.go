package stdiobridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"time"
)

// seqEnv makes the test binary a sequential stdio server (seqMain): it
// reads one line, serves it, and only then reads the next, as simple
// hand-written servers do, so that while it serves a long call it reads
// nothing.
const seqEnv = "STDIOBRIDGE_SEQ"

// seqMain serves stdin until it ends: initialize, tools/call "busy"
// (sleeps arguments.ms milliseconds, reading nothing meanwhile), "size"
// (answers the length of the line it came in) and "bigids" (sends
// arguments.n pings to the client, each with an id of arguments.size
// bytes, then answers); anything else with
// an id gets an empty result. With the argument "refuse", it answers
// initialize with an error. With other arguments, before it answers
// initialize it sends each as the method of a request to the client
// ("ping", "sampling/createMessage") and waits for its answer; tool
// "early" then answers what they got.
func seqMain() {
	r := bufio.NewReaderSize(os.Stdin, 1<<16)
	w := bufio.NewWriter(os.Stdout)
	answer := func(id json.RawMessage, result string) {
		_, _ = w.WriteString(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + "}\n")
		_ = w.Flush()
	}
	var early []string
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					MS   int `json:"ms"`
					N    int `json:"n"`
					Size int `json:"size"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || m.Method == "" {
			continue
		}
		switch {
		case m.Method == "initialize" && len(os.Args) > 1 && os.Args[1] == "refuse":
			_, _ = w.WriteString(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32602,"message":"Unsupported protocol version","data":{"supported":["2024-11-05"]}}}` + "\n")
			_ = w.Flush()
		case m.Method == "initialize":
			for i, method := range os.Args[1:] {
				id := `"early` + strconv.Itoa(i) + `"`
				_, _ = w.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{}}` + "\n")
				_ = w.Flush()
				for { // its answer; whatever else comes meanwhile is lost
					l, err := r.ReadBytes('\n')
					if err != nil {
						return
					}
					var a struct {
						ID     json.RawMessage `json:"id"`
						Method string          `json:"method"`
					}
					if json.Unmarshal(l, &a) == nil && string(a.ID) == id && a.Method == "" {
						early = append(early, string(bytes.TrimSpace(l)))
						break
					}
				}
			}
			answer(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"seq","version":"1"}}`)
		case m.Method == "tools/call" && m.Params.Name == "busy":
			time.Sleep(time.Duration(m.Params.Arguments.MS) * time.Millisecond)
			answer(m.ID, `{"content":[{"type":"text","text":"slept"}]}`)
		case m.Method == "tools/call" && m.Params.Name == "bigids":
			// n pings to the client, each with an id of size bytes.
			args := m.Params.Arguments
			for i := range args.N {
				id := strconv.Itoa(i) + strings.Repeat("i", max(0, args.Size-8))
				_, _ = w.WriteString(`{"jsonrpc":"2.0","id":"` + id + `","method":"ping"}` + "\n")
			}
			answer(m.ID, `{"content":[{"type":"text","text":"sent"}]}`)
		case m.Method == "tools/call" && m.Params.Name == "early":
			q, _ := json.Marshal(strings.Join(early, " "))
			answer(m.ID, `{"content":[{"type":"text","text":`+string(q)+`}]}`)
		case m.Method == "tools/call" && m.Params.Name == "size":
			answer(m.ID, `{"content":[{"type":"text","text":"`+strconv.Itoa(len(line))+`"}]}`)
		default:
			answer(m.ID, `{}`)
		}
	}
}
