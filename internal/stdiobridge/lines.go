package stdiobridge

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Errors of the line reader.
var (
	errLineTooLong = errors.New("stdiobridge: line over the size bound")
	errPartialLine = errors.New("stdiobridge: output ended inside a line")
)

// lineReader reads newline-delimited lines of at most max bytes (the
// newline and a carriage return before it not counted), reusing its
// buffer: a returned line is valid until the next call.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next non-empty line, io.EOF at a clean end, or an
// error: errLineTooLong past the bound (nothing more of the line is
// read), errPartialLine at an end inside a line, or the reader's.
func (l *lineReader) next() ([]byte, error) {
	for {
		l.buf = l.buf[:0]
		for {
			frag, err := l.r.ReadSlice('\n')
			if len(l.buf)+len(frag) > l.max+2 {
				return nil, errLineTooLong
			}
			l.buf = append(l.buf, frag...)
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) && len(bytes.TrimSpace(l.buf)) > 0 {
				return nil, errPartialLine
			}
			return nil, err
		}
		line := bytes.TrimSuffix(l.buf[:len(l.buf)-1], []byte{'\r'})
		if len(line) > l.max {
			return nil, errLineTooLong
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, nil
	}
}
