package middleware

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	rpcanswer "github.com/mcpguard/mcpguard/internal/answer"
)

// Task binding (docs/policy.md, "Tasks are the principal's"). MCP tasks
// (2025-11-25 basic/utilities/tasks, and the tasks extension of
// 2026-07-28, SEP-2663) are durable handles to a request's result that a
// client polls by ID. The middleware binds each task to the principal
// whose request created it, whatever the server behind does:
//
//   - the answer of a request that may create a task (params.task, or the
//     tasks extension in the request's client capabilities) is read, and a
//     CreateTaskResult in it (result.task.taskId, or resultType "task" and
//     result.taskId) is recorded with its owner and the scopes the request
//     needed, before the client sees it;
//   - tasks/get, tasks/result, tasks/cancel and tasks/update (any tasks/
//     method but tasks/list) are served only for a params.taskId the
//     caller owns, and need the scopes its creating request needed; any
//     other ID is answered "Task not found" without reaching the server;
//   - tasks/list answers, and result.tasks arrays in any answer, keep only
//     the caller's tasks;
//   - task status notifications (notifications/tasks/status,
//     notifications/tasks) of tasks the caller does not own are dropped
//     from every SSE stream (POST answers and GET streams).
const (
	methodTasksList  = "tasks/list"
	tasksPrefix      = "tasks/"
	notifTaskStatus  = "notifications/tasks/status" // 2025-11-25
	notifTasks       = "notifications/tasks"        // tasks extension
	maxFreeTaskWrite = 64
)

// defaultTaskTTL is how long the middleware remembers a task's owner when
// the task's own ttl (plus a minute) is longer or unlimited: past it, the
// task is refused as unknown.
const defaultTaskTTL = 24 * time.Hour

// taskGrace is added to a task's ttl: the server may purge the task at its
// ttl, a little later than the middleware recorded it.
const taskGrace = time.Minute

// Answers of the task binding.
const (
	bodyTaskNotFoundTail = `,"error":{"code":-32602,"message":"Task not found"}}`
	bodyInternalTail     = `,"error":{"code":-32603,"message":"Internal error"}}`
)

var (
	// errUnknownTask: a task operation (tasks/get, tasks/result,
	// tasks/cancel, tasks/update) names a task the caller does not own:
	// one created by another principal, one the middleware never saw
	// created (before a restart with the in-memory store, or past
	// defaultTaskTTL), or no task ID at all. Answered, without reaching the
	// server, as an MCP server answers an unknown task: JSON-RPC -32602
	// "Task not found" with the request's id, HTTP 200 (400 from
	// 2026-07-28, SEP-2575).
	errUnknownTask = errors.New("middleware: unknown task")
	// errTaskStore: the task store failed, so a task's owner could not be
	// checked. Answered 503 with Retry-After (fail closed).
	errTaskStore = errors.New("middleware: task store unavailable")

	errNoTaskID     = fmt.Errorf("%w: params.taskId missing or not a string", errUnknownTask)
	errTaskIDReused = errors.New("middleware: task ID already recorded for another principal")
)

// Reasons of the task binding.
const (
	// reasonUnknownTask: errUnknownTask.
	reasonUnknownTask Reason = "unknown_task"
	// reasonTaskStore: errTaskStore (503).
	reasonTaskStore Reason = "task_store_unavailable"
)

// isTaskOp reports whether method is a task operation naming one task
// (every tasks/ method but tasks/list).
func isTaskOp(method []byte) bool {
	return bytes.HasPrefix(method, []byte(tasksPrefix)) && string(method) != methodTasksList
}

// taskOwner returns the owner key of the tasks p creates with r: the key
// of p's sessions (sessions.owner: its UserID, or its ID with
// SessionConfig.BindClient), so that every client of a user reaches the
// user's tasks as it reaches the user's sessions (a client that registers
// anew at step-up keeps its tasks); and for the anonymous principal
// (public operations) also the request's session, so that tokenless
// callers in different sessions do not share tasks.
func (m *Middleware) taskOwner(p *Principal, h http.Header) string {
	if p.Anonymous {
		if sid := h.Get(sessionHeader); sid != "" {
			return anonymousID + "\x00" + sid
		}
	}
	return m.sessions.owner(p)
}

// encodeTask and decodeTask are the owner of a task's record
// (kindTask): the principal's owner key, length prefixed, then the
// creating operation's scope key (sorted, space separated).
func encodeTask(owner, scopes string) string {
	return strconv.Itoa(len(owner)) + ":" + owner + scopes
}

func decodeTask(rec string) (owner, scopes string, ok bool) {
	if rec == "" {
		return "", "", false
	}
	n, rest, found := strings.Cut(rec, ":")
	if !found {
		return "", "", false
	}
	l, err := strconv.Atoi(n)
	if err != nil || l < 0 || l > len(rest) {
		return "", "", false
	}
	return rest[:l], rest[l:], true
}

// checkTask authorizes a task operation (isTaskOp) of p after its method's
// policy: the task must be p's, and p must hold the scopes of the request
// that created it. It answers and returns true when it refuses.
func (m *Middleware) checkTask(w http.ResponseWriter, r *http.Request, p *Principal, msg *message) bool {
	g := p.grant
	if removedTaskMethod(r.Header, msg) {
		m.refuse(w, r, &refusal{err: errMethodNotFound, p: p, g: g, id: msg.id})
		return true
	}
	if !msg.taskID.str {
		m.refuse(w, r, &refusal{err: errNoTaskID, p: p, g: g, id: msg.id})
		return true
	}
	rec, err := m.tasks.Owner(r.Context(), kindTask, string(msg.taskID.v), defaultTaskTTL)
	if err != nil {
		m.refuse(w, r, &refusal{err: fmt.Errorf("%w: %w", errTaskStore, err), p: p, g: g})
		return true
	}
	owner, scopes, valid := decodeTask(rec)
	if !valid || owner != m.taskOwner(p, r.Header) {
		m.refuse(w, r, &refusal{err: errUnknownTask, p: p, g: g, id: msg.id})
		return true
	}
	var missing []string
	for s := range strings.FieldsSeq(scopes) {
		if !m.satisfied(p.Scopes, s) {
			missing = append(missing, s)
		}
	}
	if missing == nil {
		return false
	}
	if p.Anonymous {
		m.refuse(w, r, &refusal{err: errNoToken, g: g})
		return true
	}
	required := appendUnique(slices.Clone(g.op.scopes), strings.Fields(scopes)...)
	m.insufficient(w, r, &refusal{p: p, g: g}, scopeNeed(required), missing)
	return true
}

// resultNames are the result members the binding reads.
var resultNames = []string{"tasks", "task", "taskId", "resultType", "ttlMs"}

// filterTasks returns result with its "tasks" array reduced to the
// caller's tasks, or nil when result has none or all are the caller's.
func (t *answerWriter) filterTasks(result []byte) ([]byte, error) {
	tasks, start, end, ok, err := rpcanswer.Member(&t.m.json, result, resultNames, "tasks")
	if err != nil || !ok || tasks[0] != '[' {
		return nil, err
	}
	arr, removed, err := rpcanswer.FilterArray(tasks, func(e []byte) (bool, error) {
		if e[0] != '{' {
			return false, nil
		}
		return t.ownsParam(e)
	})
	if err != nil || !removed {
		return nil, err
	}
	return rpcanswer.Splice(result, start, end, arr), nil
}

// ownsParam reports whether obj (notification params, a listed task) has
// a string taskId of a task the caller owns.
func (t *answerWriter) ownsParam(obj []byte) (bool, error) {
	if len(obj) == 0 || obj[0] != '{' {
		return false, nil
	}
	v, _, _, ok, err := rpcanswer.Member(&t.m.json, obj, []string{"taskId"}, "taskId")
	if err != nil || !ok {
		return false, nil // unreadable or no ID: not shown
	}
	id, ok := rpcanswer.String(v)
	if !ok {
		return false, nil
	}
	rec, err := t.m.tasks.Owner(t.ctx, kindTask, id, defaultTaskTTL)
	if err != nil {
		return false, fmt.Errorf("%w: %w", errTaskStore, err)
	}
	owner, _, valid := decodeTask(rec)
	return valid && owner == t.ownerKey(), nil
}

// record stores the task a CreateTaskResult creates: result.task (2025-11-25)
// or result itself with resultType "task" (2026-07-28), with the owner,
// the creating request's scopes and an expiry from the task's ttl. A result
// without a task (the server did not create one) records nothing. A task
// ID already recorded for another owner is refused.
func (t *answerWriter) record(result []byte) error {
	var task, resultType, taskID, ttl []byte
	err := t.m.json.Members(result, resultNames, func(name, v []byte) error {
		switch string(name) {
		case "task":
			task = v
		case "resultType":
			resultType = v
		case "taskId":
			taskID = v
		case "ttlMs":
			ttl = v
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case len(task) > 0 && task[0] == '{':
		taskID, ttl = nil, nil
		err = t.m.json.Members(task, []string{"taskId", "ttl"}, func(name, v []byte) error {
			switch string(name) {
			case "taskId":
				taskID = v
			case "ttl":
				ttl = v
			}
			return nil
		})
		if err != nil {
			return err
		}
	case string(resultType) != `"task"`:
		return nil // not a CreateTaskResult
	}
	id, ok := rpcanswer.String(taskID)
	if !ok || id == "" {
		return nil
	}
	owner := encodeTask(t.ownerKey(), t.scopes)
	holder, err := t.m.tasks.Claim(t.ctx, kindTask, id, owner, taskLifetime(ttl))
	if err == nil && holder != owner {
		return errTaskIDReused
	}
	return err
}

// taskLifetime is how long a task with the raw ttl (milliseconds, or null)
// is remembered: its ttl plus taskGrace, at most defaultTaskTTL.
func taskLifetime(ttl []byte) time.Duration {
	ms, err := strconv.ParseFloat(string(ttl), 64)
	if err != nil || ms < 0 || ms >= float64(defaultTaskTTL/time.Millisecond) {
		return defaultTaskTTL
	}
	return min(time.Duration(ms)*time.Millisecond+taskGrace, defaultTaskTTL)
}
