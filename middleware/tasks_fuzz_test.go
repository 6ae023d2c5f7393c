package middleware

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzTaskRewrite feeds arbitrary answer messages to the task binding's
// reader, for a caller owning only task "mine": it never panics, and no
// message it keeps or rewrites shows another task, to encoding/json
// (a lenient reader), as a status notification or a listed task.
func FuzzTaskRewrite(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"theirs","status":"completed"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"mine","status":"completed","result":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications\/tasks\u002fstatus","params":{"taskId":"theirs"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"mine"},{"taskId":"theirs"},7,{"taskId":1}],"nextCursor":"x"}}`,
		`{"jsonrpc":"2.0","id":"r","result":{"task":{"taskId":"new","ttl":1000}}}`,
		`{"jsonrpc":"2.0","id":"r","result":{"resultType":"task","taskId":"new2","ttlMs":null}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"theirs","TaskId":"mine"}]}}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	m := newFake(f, fakeValidator{claims: fakeClaims("mcp")}, nil)
	p := newPrincipal(fakeClaims("mcp"))
	owner := encodeTask(m.taskOwner(p, http.Header{}), "mcp")
	f.Fuzz(func(t *testing.T, msg []byte, create bool) {
		// A fresh store: tasks recorded by earlier inputs are not "mine".
		m.tasks = newMemoryOwnerStore(memoryOwnerConfig{})
		if _, err := m.tasks.Claim(context.Background(), kindTask, "mine", owner, defaultTaskTTL); err != nil {
			t.Fatal(err)
		}
		tw := &answerWriter{m: m, ctx: context.Background(), p: p, hdr: http.Header{}, create: create, list: !create, scopes: "mcp", reqID: []byte(`"r"`)}
		out, err := tw.Rewrite(msg)
		if err != nil || out == nil {
			return
		}
		var v struct {
			Method string `json:"method"`
			Params struct {
				TaskID any `json:"taskId"`
			} `json:"params"`
			Result struct {
				Tasks []struct {
					TaskID any `json:"taskId"`
				} `json:"tasks"`
			} `json:"result"`
		}
		if json.Unmarshal(out, &v) != nil {
			return // no lenient reader sees anything either
		}
		if (v.Method == notifTaskStatus || v.Method == notifTasks) && v.Params.TaskID != "mine" {
			t.Fatalf("kept a notification of task %v: %s", v.Params.TaskID, out)
		}
		for _, e := range v.Result.Tasks {
			if e.TaskID != "mine" {
				t.Fatalf("listed task %v: %s", e.TaskID, out)
			}
		}
	})
}
