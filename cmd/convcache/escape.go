package main

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// safeText makes a string read from a cache file (a scope name, a key
// shown as text) safe to print on a terminal: every byte or character that
// is not printable is written as an escape, so a file cannot clear the
// screen, move the cursor, overwrite a line with \r, start a new line that
// looks like the tool's own, or reorder text with bidirectional controls.
//
//   - ASCII controls (\t, \n, \r, ESC, DEL, ...) become \t, \n, \r or \xNN;
//   - a byte that is not valid UTF-8 becomes \xNN;
//   - a non-printing character (C1 controls such as U+009B, format
//     characters such as U+202E, line and paragraph separators) becomes
//     \uNNNN;
//   - a backslash becomes \\, so that escapes cannot be forged.
//
// Printable text, including letters of every script and the space, is
// kept. JSON output needs none of this: encoding/json escapes control
// characters itself.
func safeText(s string) string {
	if isSafe(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < utf8.RuneSelf && !strconv.IsPrint(r):
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case !strconv.IsPrint(r):
			b.WriteString(`\u`)
			b.WriteString(strings.Repeat("0", 4-min(4, len(strconv.FormatInt(int64(r), 16)))))
			b.WriteString(strconv.FormatInt(int64(r), 16))
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// isSafe reports whether s needs no escaping: the common case, checked
// without allocating.
func isSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}
