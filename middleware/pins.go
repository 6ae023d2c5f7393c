package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// Pinned tool definitions (docs/policy.md, "Pinned tools"). With
// Config.Pins.On, the answer layer (lists.go) takes the digest of every
// tool a tools/list answer shows and records it in a PinStore: a tool's
// first digest is its pin (trust on first use), unless the operator
// accepted one (ToolPins.Accepted). A tool whose listed definition is not
// its pin is left out of the list, and its tools/call refused with
// errToolChanged, until the operator accepts the new digest.

// ToolPins pins the definitions of the tools the handler lists:
// Config.Pins (docs/policy.md, "Pinned tools").
type ToolPins struct {
	// On pins every tool a tools/list answer shows, for this route
	// (Metadata.Resource): its first listed definition is trusted (or
	// the one Accepted names); once the server lists another, the tool
	// is left out of every list and its tools/call is refused with a
	// final JSON-RPC error naming it, until an operator accepts the new
	// digest. Defaults to false: definitions are not pinned.
	On bool
	// Store keeps the pins and the last listed digests. Nil means an
	// in-process store for this Middleware alone, whose pins a restart
	// forgets (every tool is then pinned again when first listed): share
	// one from [NewMemoryPinStore] between the Middleware of successive
	// configurations, or use redisstore's between replicas. Ignored
	// without On.
	Store PinStore
	// Accepted maps a tool name to the digest an operator accepted for
	// it (lower-case hex SHA-256, as the log line of a changed tool names
	// it: docs/policy.md, "Pinned tools"), which replaces the store's pin of
	// that tool. Nil means none: every pin is the first digest seen.
	Accepted map[string]string
}

// PinStore keeps the pinned tool definitions of routes (ToolPins.Store):
// for each route (a Metadata.Resource) and tool name, its pin (the
// digest first recorded) and the digest it was last listed with. Its
// methods use only standard types, so a store in another package
// satisfies it without importing this one. Implementations must be safe
// for concurrent use and bounded; an error means the store is
// unavailable, and the middleware then fails closed (a list answer it
// cannot check is refused: 502, or its SSE event removed; a tools/call is
// answered 503).
type PinStore interface {
	// Observe records the tools a tools/list answer on route shows:
	// digests[i] is the digest of tools[i]. A tool without a pin gets
	// digests[i] as its pin (trust on first use); every tool's listed
	// digest becomes digests[i]. It returns each tool's pin afterwards,
	// "" for a tool the store cannot hold (it is full).
	Observe(ctx context.Context, route string, tools, digests []string) (pins []string, err error)
	// Lookup returns the pin of tool on route and the digest it was last
	// listed with, both "" when the tool was never recorded.
	Lookup(ctx context.Context, route, tool string) (pin, listed string, err error)
}

// Bounds of pinning.
const (
	// maxPinnedTools bounds the tools one route's pins hold in the
	// in-process store (redisstore's has the same bound): a tool listed
	// beyond it is not pinned, and so never listed.
	maxPinnedTools = 10000
	// maxPinnedName bounds the name of a pinned tool, in bytes: a tool
	// with a longer name is not pinned, and so never listed (MCP
	// recommends at most 128 characters).
	maxPinnedName = 256
)

// pinMembers are the members of a tool that its digest covers: what a
// model reads and what its calls send (MCP Tool).
var pinMembers = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// toolDigest returns the raw name member of tool (nil when absent) and
// its digest, reading with p: tool is one entry of a tools/list result (a
// JSON object), and its digest the lower-case hex SHA-256 of the RFC 8785
// canonical JSON of its members name, title, description, inputSchema,
// outputSchema and annotations (those it has). Other members (_meta,
// icons, the securitySchemes the middleware writes) are not covered. It
// fails unless tool is one JSON object without duplicate member names or
// case variants of those it covers.
func toolDigest(p *strictjson.Pool, tool []byte) (name []byte, digest string, err error) {
	obj := make([]byte, 0, len(tool))
	obj = append(obj, '{')
	err = p.Members(tool, pinMembers, func(n, value []byte) error {
		if !slices.Contains(pinMembers, string(n)) {
			return nil
		}
		if string(n) == "name" {
			name = value
		}
		if len(obj) > 1 {
			obj = append(obj, ',')
		}
		obj = append(append(append(append(obj, '"'), n...), `":`...), value...)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	c, err := strictjson.Canonical(append(obj, '}'))
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(c)
	return name, hex.EncodeToString(sum[:]), nil
}

// pins is the pinning of one Middleware: nil when Config.Pins.On is
// false.
type pins struct {
	store    PinStore
	route    string
	accepted map[string]string
}

// newPins returns the pinning of cfg, nil when off.
func newPins(cfg *Config) *pins {
	if !cfg.Pins.On {
		return nil
	}
	s := cfg.Pins.Store
	if s == nil {
		s = NewMemoryPinStore()
	}
	return &pins{store: s, route: cfg.Metadata.Resource, accepted: cfg.Pins.Accepted}
}

// expected returns the digest tool must be listed with: the accepted
// one, else its pin.
func (ps *pins) expected(tool, pin string) string {
	if d, ok := ps.accepted[tool]; ok {
		return d
	}
	return pin
}

// checkPins checks the pins of the tools of a tools/list result's
// entries: it returns, for each element, whether it must be left out
// (its definition is not the pinned one, or cannot be pinned), and
// records what it saw. An element that is not an object or has no string
// name is left out by appendEntry anyway.
func (t *answerWriter) checkPins(elems [][]byte) ([]bool, error) {
	ps := t.m.pins
	hide := make([]bool, len(elems))
	idx := make([]int, 0, len(elems))
	names := make([]string, 0, len(elems))
	digests := make([]string, 0, len(elems))
	for i, elem := range elems {
		if len(elem) == 0 || elem[0] != '{' {
			continue
		}
		name, d, err := toolDigest(&t.m.json, elem)
		if err != nil {
			return nil, err
		}
		str, ok := strictjson.String(name)
		if !ok {
			continue
		}
		if len(str) > maxPinnedName {
			hide[i] = true
			continue
		}
		idx, names, digests = append(idx, i), append(names, str), append(digests, d)
	}
	if len(names) == 0 {
		return hide, nil
	}
	got, err := ps.store.Observe(t.ctx, ps.route, names, digests)
	if err == nil && len(got) != len(names) {
		err = fmt.Errorf("pin store returned %d pins for %d tools", len(got), len(names))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errPinStore, err)
	}
	for j, i := range idx {
		want := ps.expected(names[j], got[j])
		if want == "" || digests[j] != want {
			hide[i] = true
			if ok, _ := t.m.refusals.allow(reasonToolChanged+"/list", t.m.cfg.Now(), defaultRefusalLogRate); !ok {
				continue
			}
			t.m.log.LogAttrs(t.ctx, slog.LevelWarn, "middleware: tool definition changed; hidden and refused until accepted",
				slog.String("route", ps.route), slog.String("tool", names[j]),
				slog.String("pinned", want), slog.String("listed", digests[j]))
		}
	}
	return hide, nil
}

var (
	// errToolChanged: a tools/call names a tool whose definition, as the
	// server last listed it on this route, is not its pin (Config.Pins).
	// Answered without reaching the server: JSON-RPC -32602 naming the
	// tool, HTTP 200 (400 from 2026-07-28, SEP-2575); final, not a
	// step-up.
	errToolChanged = errors.New("middleware: tool definition changed since it was pinned")
	// errPinStore: the pin store failed. A tools/call is answered 503
	// with Retry-After; a tools/list answer is refused (fail closed).
	errPinStore = errors.New("middleware: pin store unavailable")
)

// Reasons of pinning.
const (
	// reasonToolChanged: errToolChanged.
	reasonToolChanged Reason = "tool_changed"
	// reasonPinStore: errPinStore (503).
	reasonPinStore Reason = "pin_store_unavailable"
)

// bodyToolChangedTail follows the id in the answer to a call of a changed
// tool; the tool's name (JSON) and toolChangedEnd follow it.
const (
	bodyToolChangedTail = `,"error":{"code":-32602,"message":"Tool definition changed","data":{"tool":`
	toolChangedEnd      = `}}}`
)

// toolChangedBody returns the answer to a tools/call of tool with the
// raw id.
func toolChangedBody(id []byte, tool string) string {
	name, err := json.Marshal(tool)
	if err != nil {
		name = []byte(`""`) // a string: cannot fail
	}
	return bodyMismatchHead + echoID(id) + bodyToolChangedTail + string(name) + toolChangedEnd
}

// refusePinned refuses msg, a tools/call authorized for p, when its tool
// is held (errToolChanged) or the pin store failed (errPinStore), and
// reports whether it did.
func (m *Middleware) refusePinned(w http.ResponseWriter, r *http.Request, p *Principal, msg *message) bool {
	if !msg.name.str {
		return false
	}
	tool := string(msg.name.v)
	ps := m.pins
	pin, listed, err := ps.store.Lookup(r.Context(), ps.route, tool)
	switch {
	case err != nil:
		err = fmt.Errorf("%w: %w", errPinStore, err)
	case listed == "" || listed == ps.expected(tool, pin):
		return false
	default:
		err = errToolChanged
	}
	m.refuse(w, r, &refusal{err: err, p: p, g: p.grant, id: msg.id, tool: tool, args: msg.args})
	return true
}

// memoryPinStore is the in-process [PinStore].
type memoryPinStore struct {
	mu     sync.Mutex
	routes map[string]map[string]pinRecord
}

// pinRecord is one tool's pin and last listed digest.
type pinRecord struct{ pin, listed string }

// NewMemoryPinStore returns an in-process [PinStore] holding at most
// [maxPinnedTools] tools per route, for sharing pins between the
// Middleware of successive configurations (a proxy's reload): a pin it
// holds is never forgotten while it lives.
func NewMemoryPinStore() PinStore {
	return &memoryPinStore{routes: map[string]map[string]pinRecord{}}
}

// Observe implements [PinStore].
func (s *memoryPinStore) Observe(_ context.Context, route string, tools, digests []string) ([]string, error) {
	if len(tools) != len(digests) {
		return nil, errors.New("middleware: Observe: tools and digests differ in length")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := s.routes[route]
	if rt == nil {
		rt = map[string]pinRecord{}
		s.routes[route] = rt
	}
	out := make([]string, len(tools))
	for i, tool := range tools {
		rec, ok := rt[tool]
		if !ok {
			if len(rt) >= maxPinnedTools {
				continue
			}
			rec.pin = digests[i]
		}
		rec.listed = digests[i]
		rt[tool] = rec
		out[i] = rec.pin
	}
	return out, nil
}

// Lookup implements [PinStore].
func (s *memoryPinStore) Lookup(_ context.Context, route, tool string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.routes[route][tool]
	return rec.pin, rec.listed, nil
}

// checkPinConfig reports the first problem of p.
func checkPinConfig(p *ToolPins) error {
	for _, k := range slices.Sorted(maps.Keys(p.Accepted)) {
		d := p.Accepted[k]
		if k == "" || len(k) > maxPinnedName {
			return fmt.Errorf("%w: Pins.Accepted has an empty or too long tool name", errConfig)
		}
		if b, err := hex.DecodeString(d); err != nil || len(b) != sha256.Size || hex.EncodeToString(b) != d {
			return fmt.Errorf("%w: Pins.Accepted[%s] is not a lower-case hex SHA-256", errConfig, k)
		}
	}
	return nil
}
