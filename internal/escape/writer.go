package escape

import (
	"bytes"
	"io"
	"sync"
)

// LineWriter returns a writer for a library's log lines (the standard log
// package's output, which Helm's SDK warns through): each Write is one
// message, written to w as one line of prefix and the message escaped as
// Line escapes it (a newline inside the message is shown as \n, so a
// message cannot forge a line of its own). Writes are serialised. It
// returns len(p) and w's error.
func LineWriter(w io.Writer, prefix string) io.Writer {
	return &lineWriter{w: w, prefix: prefix}
}

type lineWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
}

func (l *lineWriter) Write(p []byte) (int, error) {
	msg := string(bytes.TrimSuffix(p, []byte("\n")))
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := io.WriteString(l.w, l.prefix+Line(msg)+"\n"); err != nil {
		return 0, err
	}
	return len(p), nil
}
