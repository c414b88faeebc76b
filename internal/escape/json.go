package escape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// WriteJSON writes v to w as stowage's JSON reports are written: indented
// by two spaces, one value ended by a newline, '<', '>' and '&' as they
// are. encoding/json escapes the C0 controls and U+2028/U+2029 but leaves
// DEL, the C1 controls (U+0080–U+009F, whose U+009B is a terminal's CSI)
// and the bidirectional and zero-width format characters raw; WriteJSON
// writes every character Line escapes as a \u escape (a surrogate pair
// beyond U+FFFF), so a report piped to a terminal cannot drive it, and a
// JSON decoder reads back the same strings. Bytes that are not UTF-8
// become U+FFFD, as encoding/json writes them.
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(jsonSafe(buf.Bytes()))
	return err
}

// jsonSafe rewrites every unsafe rune of b, encoded JSON, as a \u escape.
// Outside strings JSON is ASCII, and no escape sequence holds a rune at or
// above DEL, so each such rune is a string's character and its escape
// means the same.
func jsonSafe(b []byte) []byte {
	i := 0
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if r >= 0x7f && unsafe(r) {
			break
		}
		i += n
	}
	if i == len(b) {
		return b
	}
	out := bytes.NewBuffer(make([]byte, 0, len(b)+16))
	out.Write(b[:i])
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r >= 0x7f && unsafe(r) && r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(out, `\u%04x\u%04x`, r1, r2)
		case r >= 0x7f && unsafe(r):
			fmt.Fprintf(out, `\u%04x`, r)
		default:
			out.Write(b[i : i+n])
		}
		i += n
	}
	return out.Bytes()
}
