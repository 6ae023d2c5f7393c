package audit

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable returns s with every rune that is not printable escaped the
// way Go writes it (\x1b, \u009b, \u202e, \xff for an invalid byte): the
// C0 and C1 controls a terminal acts on (ESC, BEL, the 8-bit CSI),
// bidirectional and other format characters that reorder or hide text,
// and line or paragraph separators. Every detail and evidence line of a
// report goes through it, since the audited server controls much of their
// text (tool names, metadata members, challenge parameters, the names in
// its TLS certificate that a verification error quotes).
func printable(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafeRune(r):
			b.WriteString(s[i : i+n])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports a rune printable escapes.
func unsafeRune(r rune) bool { return r != ' ' && !unicode.IsPrint(r) }

// cut returns s shortened to at most n bytes, at a rune boundary, with
// "…" appended when it was shortened.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
