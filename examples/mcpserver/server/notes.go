package server

import (
	"errors"
	"sync"
	"time"
	"unicode/utf8"
)

// Limits of the in-memory note store. The example keeps everything in
// memory, so both are bounded: a client cannot grow the process without
// limit by writing notes.
const (
	// MaxNoteBytes is the longest note text accepted, in bytes.
	MaxNoteBytes = 4 << 10
	// DefaultMaxNotesPerTenant is Config.MaxNotesPerTenant when zero.
	DefaultMaxNotesPerTenant = 1000
	// DefaultMaxTenants is Config.MaxTenants when zero.
	DefaultMaxTenants = 1000
)

// Errors of the note store. Tool handlers turn them into tool errors
// (isError: true); their text is safe to show to the caller.
var (
	errEmptyNote   = errors.New("text must not be empty")
	errNoteTooLong = errors.New("text is longer than 4096 bytes")
	errNoteUTF8    = errors.New("text must be valid UTF-8")
	errTenantFull  = errors.New("this tenant has reached its note limit")
	errStoreFull   = errors.New("the server has reached its tenant limit")
)

// Note is one stored note. Its tenant is implicit: notes are only ever
// returned to principals of the tenant that wrote them.
type Note struct {
	// ID is the note's number within its tenant, starting at 1.
	ID int `json:"id"`
	// Text is the note text.
	Text string `json:"text"`
	// Author is the subject ("sub") of the principal that wrote it.
	Author string `json:"author"`
	// Created is when the server stored it, in UTC.
	Created time.Time `json:"created"`
}

// notes is an in-memory, per-tenant note store, safe for concurrent use.
type notes struct {
	maxPerTenant int
	maxTenants   int
	now          func() time.Time

	mu       sync.Mutex
	byTenant map[string][]Note
}

func newNotes(maxPerTenant, maxTenants int, now func() time.Time) *notes {
	return &notes{
		maxPerTenant: maxPerTenant,
		maxTenants:   maxTenants,
		now:          now,
		byTenant:     make(map[string][]Note),
	}
}

// list returns a copy of tenant's notes, oldest first. It never returns nil,
// so that an empty list encodes as [] rather than null.
func (s *notes) list(tenant string) []Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Note{}, s.byTenant[tenant]...)
}

// add stores text for tenant and returns the new note.
func (s *notes) add(tenant, author, text string) (Note, error) {
	switch {
	case text == "":
		return Note{}, errEmptyNote
	case len(text) > MaxNoteBytes:
		return Note{}, errNoteTooLong
	case !utf8.ValidString(text):
		return Note{}, errNoteUTF8
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.byTenant[tenant]
	if !ok && len(s.byTenant) >= s.maxTenants {
		return Note{}, errStoreFull
	}
	if len(cur) >= s.maxPerTenant {
		return Note{}, errTenantFull
	}
	n := Note{ID: len(cur) + 1, Text: text, Author: author, Created: s.now().UTC()}
	s.byTenant[tenant] = append(cur, n)
	return n, nil
}
