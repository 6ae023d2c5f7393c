package answer

import (
	"bytes"
	"io"
	"net/http"
)

// bom is U+FEFF in UTF-8, which an event stream may start with.
var bom = [3]byte{0xEF, 0xBB, 0xBF}

// sseState is where the event splitter stands in the stream.
type sseState struct {
	bom      int  // bytes of a leading BOM matched so far; -1 once past the stream's start
	hadBOM   bool // the stream started with a BOM (it is in the first event's bytes)
	first    bool // the event being read is not the stream's first
	cr       bool // the last byte read was a CR ending a line (an LF right after it belongs to it)
	lineLen  int  // bytes of the current line so far, a leading BOM excluded
	skipping bool // discarding an event over the bound until its end
	rewrote  bool // the last event was not written as read (an LF completing its final CRLF is dropped)
	wrote    bool // a byte of the stream has been written
	dropped  bool // the last event with data was over the bound (or the stream ends in one)
}

// emit writes b on. A stream must not start with a BOM that was not the
// input's own leading one: an event of the input that starts with U+FEFF
// has a field name beginning with it, but at the start of the output
// (because the events before it were dropped) clients would strip it and
// read the line as a field they were never shown by the Rewriter. Such an
// output starts with an empty comment line instead.
func (w *Writer) emit(b []byte, leadingBOM bool) error {
	if len(b) == 0 {
		return nil
	}
	if !w.sse.wrote && b[0] == bom[0] && !leadingBOM {
		if _, err := io.WriteString(w.w, ":\n"); err != nil {
			return err
		}
	}
	w.sse.wrote = true
	_, err := w.w.Write(b)
	return err
}

// feed splits p into events: bytes are added to the current event (w.body)
// and every complete event is rewritten and written on.
func (w *Writer) feed(p []byte) error {
	s := &w.sse
	fast := true
	for len(p) > 0 {
		if fast && s.bom < 0 && !s.cr && !s.skipping && len(w.body) == 0 && s.lineLen == 0 {
			n, done, err := w.feedEvents(p)
			if err != nil {
				return err
			}
			p = p[n:]
			if !done {
				fast = false // the rest goes line by line, this write
			}
			continue
		}
		if s.bom >= 0 {
			if p[0] == bom[s.bom] {
				w.add(p[:1])
				p = p[1:]
				if s.bom++; s.bom == len(bom) {
					s.bom, s.hadBOM = -1, true
				}
				continue
			}
			s.lineLen += s.bom // a partial BOM is ordinary content
			s.bom = -1
		}
		if s.cr && p[0] == '\n' { // the LF of a CRLF
			s.cr = false
			if len(w.body) == 0 && !s.skipping {
				// It ended the previous event, which has been written
				// (as read: the LF follows; rebuilt or dropped: it ended
				// with its own LF).
				if !s.rewrote {
					if err := w.emit(p[:1], false); err != nil {
						return err
					}
				}
			} else {
				w.add(p[:1])
			}
			p = p[1:]
			continue
		}
		s.cr = false
		i := indexEOL(p)
		if i < 0 {
			w.add(p)
			s.lineLen += len(p)
			return nil
		}
		w.add(p[:i+1])
		s.lineLen += i
		s.cr = p[i] == '\r'
		p = p[i+1:]
		blank := s.lineLen == 0
		s.lineLen = 0
		if blank {
			if err := w.endEvent(); err != nil {
				return err
			}
		}
	}
	return nil
}

// add appends b to the current event, or starts skipping it when it would
// exceed the bound.
func (w *Writer) add(b []byte) {
	if w.sse.skipping {
		return
	}
	if len(w.body)+len(b) > w.max {
		w.sse.skipping, w.sse.dropped = true, true
		w.body = w.body[:0]
		if w.err == nil {
			w.err = ErrTooLarge
		}
		return
	}
	w.body = append(w.body, b...)
}

// feedEvents is feed's fast path, for a Writer between two events
// (nothing held, at the start of a line, no CR pending): it takes the
// complete events at the start of p that end with LF only and fit the
// bound, judges each in place (no copy), and writes each run of events
// kept as read in one Write (a read that brought several events is
// written as it came). It returns the bytes it consumed and done, true
// when it stopped only because p was consumed; the rest of p (an event
// with a CR, over the bound or incomplete) is for feed's general path.
func (w *Writer) feedEvents(p []byte) (n int, done bool, err error) {
	s := &w.sse
	run := 0 // the start of the run of kept events not yet written
	for n < len(p) {
		// One pass over the event's lines finds its end (the first
		// blank line) and its data; a CR anywhere voids the reading.
		rest := p[n:]
		end, complete := 0, false
		var data, id []byte
		nd := 0
		for end < len(rest) && end <= w.max {
			i := bytes.IndexByte(rest[end:], '\n')
			if i < 0 {
				break
			}
			line := rest[end : end+i]
			end += i + 1
			if i == 0 {
				complete = true
				break
			}
			switch name, value := field(line); string(name) {
			case "data":
				data, nd = w.addData(data, nd, value)
			case "id":
				id = eventID(id, value)
			}
		}
		if !complete || end > w.max || bytes.IndexByte(rest[:end], '\r') >= 0 {
			break
		}
		ev := rest[:end]
		s.first = true
		w.noteID(id)
		v, out := w.judgeData(data, nd)
		s.rewrote = v != keepEvent
		if v != keepEvent {
			if err := w.emit(p[run:n], false); err != nil {
				return n, false, err
			}
			if err := w.writeJudged(v, ev, out); err != nil {
				return n, false, err
			}
			run = n + end
		}
		n += end
	}
	if err := w.emit(p[run:n], false); err != nil {
		return n, false, err
	}
	return n, n == len(p), nil
}

// endEvent rewrites the complete event in w.body and writes the result.
func (w *Writer) endEvent() error {
	s := &w.sse
	ev := w.body
	w.body = w.body[:0]
	first := !s.first
	s.first = true
	s.rewrote = true
	if s.skipping {
		s.skipping = false
		return nil
	}
	lines := ev
	leading := first && s.hadBOM
	if leading {
		lines = ev[len(bom):]
	}
	v, out := w.judge(lines)
	if v == keepEvent {
		s.rewrote = false
		return w.emit(ev, leading)
	}
	return w.writeJudged(v, lines, out)
}

// verdict is what becomes of an event.
type verdict uint8

const (
	keepEvent    verdict = iota // written as read
	dropEvent                   // only its id and retry fields are written
	replaceEvent                // its data is replaced
)

// judge passes the data of the complete event ev (its lines, a leading
// BOM excluded) through the Rewriter, recording its error. It returns
// the verdict and, for replaceEvent, the new data.
func (w *Writer) judge(ev []byte) (verdict, []byte) {
	data, n, id := w.eventData(ev)
	w.noteID(id)
	return w.judgeData(data, n)
}

// eventID is the event's ID after a line "id" with value v, the ID being
// id before it: v, unless v holds U+0000 (clients ignore such a field).
func eventID(id, v []byte) []byte {
	if bytes.IndexByte(v, 0) >= 0 {
		return id
	}
	return v
}

// noteID reports the ID of an event about to be written on, if it has
// one and the caller asked (Options.EventIDs).
func (w *Writer) noteID(id []byte) {
	if len(id) > 0 && w.ids != nil {
		w.ids.EventID(id)
	}
}

// judgeData is judge for an event whose data and number of data lines
// are known.
func (w *Writer) judgeData(data []byte, n int) (verdict, []byte) {
	if n == 0 || len(data) == 0 {
		// No data (a comment, an id, a retry), or empty data, which
		// clients do not dispatch.
		return keepEvent, nil
	}
	w.sse.dropped = false
	out, err := w.rw.Rewrite(data)
	switch {
	case err != nil:
		if w.err == nil {
			w.err = err
		}
		return dropEvent, nil
	case out == nil:
		return dropEvent, nil
	case sameBytes(out, data):
		return keepEvent, nil
	}
	return replaceEvent, out
}

// writeJudged writes what is left of the event ev (its lines) dropped or
// replaced by msg.
func (w *Writer) writeJudged(v verdict, ev, msg []byte) error {
	if v == dropEvent {
		return w.writeKept(ev)
	}
	return w.writeReplaced(ev, msg)
}

func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || bytes.Equal(a, b)
}

// eventData returns the data of the event ev (its "data" values joined
// with LF) and the number of its data lines.
func (w *Writer) eventData(ev []byte) (data []byte, n int, id []byte) {
	for rest := ev; len(rest) > 0; {
		var line []byte
		line, rest = nextLine(rest)
		switch name, value := field(line); string(name) {
		case "data":
			data, n = w.addData(data, n, value)
		case "id":
			id = eventID(id, value)
		}
	}
	return data, n, id
}

// addData adds the value of an event's data line to its data so far
// (n lines, joined with LF in w.scratch from the second one on).
func (w *Writer) addData(data []byte, n int, value []byte) ([]byte, int) {
	switch n++; n {
	case 1:
		return value, n
	case 2:
		w.scratch = append(w.scratch[:0], data...)
	}
	w.scratch = append(w.scratch, '\n')
	w.scratch = append(w.scratch, value...)
	return w.scratch, n
}

// writeKept writes what is left of a dropped event: its id and retry
// fields, so that the client's last event ID still advances.
func (w *Writer) writeKept(ev []byte) error {
	out := w.obuf[:0]
	for rest := ev; len(rest) > 0; {
		var line []byte
		line, rest = nextLine(rest)
		if name, _ := field(line); string(name) == "id" || string(name) == "retry" {
			out = append(append(out, line...), '\n')
		}
	}
	w.obuf = out
	if len(out) == 0 {
		return nil
	}
	return w.emit(append(out, '\n'), false)
}

// writeReplaced writes ev with its data replaced by msg: every other line
// as it was, and msg's lines as data lines where the first data line was.
func (w *Writer) writeReplaced(ev, msg []byte) error {
	out := w.obuf[:0]
	done := false
	for rest := ev; len(rest) > 0; {
		var line []byte
		line, rest = nextLine(rest)
		if len(line) == 0 {
			break // the blank line ending the event
		}
		if name, _ := field(line); string(name) == "data" {
			if done {
				continue
			}
			done = true
			for m := msg; ; {
				var l []byte
				l, m = nextLine(m)
				out = append(append(append(out, "data: "...), l...), '\n')
				if len(m) == 0 {
					break
				}
			}
			continue
		}
		out = append(append(out, line...), '\n')
	}
	out = append(out, '\n')
	w.obuf = out
	return w.emit(out, false)
}

// nextLine splits b at its first line ending (CRLF, LF or CR): the line
// without it, and the rest.
func nextLine(b []byte) (line, rest []byte) {
	i := indexEOL(b)
	if i < 0 {
		return b, nil
	}
	if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
		return b[:i], b[i+2:]
	}
	return b[:i], b[i+1:]
}

// field splits an event line into its field name and value (one leading
// space removed). A comment (":…") has no name.
func field(line []byte) (name, value []byte) {
	i := bytes.IndexByte(line, ':')
	switch {
	case i < 0:
		return line, nil
	case i == 0:
		return nil, nil
	}
	name, value = line[:i], line[i+1:]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return name, value
}

// indexEOL is bytes.IndexAny(b, "\r\n"), with two IndexByte scans
// (vectorized) instead of a byte-by-byte set lookup.
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// endOversize ends an SSE answer whose last message was removed for its
// size with the message of Options.Oversize, as one event. Nothing of the
// removed event was written (an event is written only once complete), so
// the output is at an event's boundary, or after a lone CR that ended a
// line.
func (w *Writer) endOversize() {
	if !w.sse.dropped || w.oversize == nil {
		return
	}
	msg := w.oversize.OversizeMessage()
	if len(msg) == 0 || bytes.IndexByte(msg, '\n') >= 0 || bytes.IndexByte(msg, '\r') >= 0 {
		return
	}
	out := append(append(append(w.obuf[:0], "data: "...), msg...), "\n\n"...)
	w.obuf = out
	if w.emit(out, false) == nil {
		_ = http.NewResponseController(w.w).Flush()
	}
}
