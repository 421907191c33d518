package remote

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

var testLimits = replyLimits{bytes: 1000, elements: 16, depth: 3, line: 64}

// scanWhole and scanSplit feed a stream to a new scanner in one piece and
// cut at every given size.
func scanWhole(lim replyLimits, s string) error { return newRESPScanner(lim).scan([]byte(s)) }

func scanSplit(lim replyLimits, s string, piece int) error {
	sc := newRESPScanner(lim)
	for len(s) > 0 {
		n := min(piece, len(s))
		if err := sc.scan([]byte(s[:n])); err != nil {
			return err
		}
		s = s[n:]
	}
	return nil
}

// Replies the tier receives, alone and one after another (a pipeline), pass
// in any pieces; the budget is per reply, so many replies may together
// exceed it.
func TestScannerAccepts(t *testing.T) {
	hello := "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n$5\r\nproto\r\n:2\r\n" +
		"$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
	for _, s := range []string{
		"+PONG\r\n",
		"+OK\r\n",
		"-ERR unknown command 'HELLO'\r\n",
		":1\r\n",
		":-1\r\n",
		"$-1\r\n",
		"*-1\r\n",
		"*0\r\n",
		"$0\r\n\r\n",
		"$5\r\nab\r\nc\r\n", // a payload may hold CR and LF
		"$" + "900" + "\r\n" + strings.Repeat("x", 900) + "\r\n",
		hello,
		"*2\r\n*2\r\n:1\r\n:2\r\n*1\r\n$1\r\na\r\n",
		"*1\r\n*1\r\n*1\r\n:1\r\n", // depth 3
		strings.Repeat("$900\r\n"+strings.Repeat("y", 900)+"\r\n", 5),
		strings.Repeat(hello, 3),
	} {
		for _, piece := range []int{1, 2, 3, 7, 64, len(s)} {
			if err := scanSplit(testLimits, s, piece); err != nil {
				t.Fatalf("%q in pieces of %d: %v", s, piece, err)
			}
		}
	}
}

func TestScannerRejects(t *testing.T) {
	for _, tc := range []struct{ stream, want string }{
		{"$1099511627776\r\n", "a bulk string of 1099511627776 bytes"},
		{"$999\r\n", "a bulk string of 999 bytes"}, // 999 + CRLF + header > 1000
		{"*2147483648\r\n", "an array of 2147483648 elements"},
		{"*9\r\n*9\r\n", "an array of 9 elements"}, // 18 elements in one reply
		{"*1\r\n*1\r\n*1\r\n*1\r\n", "nested deeper than 3"},
		{"+" + strings.Repeat("a", 64) + "\r\n", "a line longer than 64"},
		{"$99999999999999999999\r\n", "a bad length"},
		{"$-2\r\n", "a bad length"},
		{"$-0\r\n", "a bad length"},
		{"$+5\r\nhello\r\n", "a bad length"},
		{"$\r\n", "a bad length"},
		{"* 1\r\n", "a bad length"},
		{"+OK\n", "a bare CR or LF"},
		{"+O\rK\r\n", "a bare CR or LF"},
		{"$2\r\nabcd", "does not end with CRLF"},
		{"%1\r\n", "not RESP2"},
		{">1\r\n", "not RESP2"},
		{"_\r\n", "not RESP2"},
		{"HTTP/1.1 400 Bad Request\r\n", "not RESP2"},
		{"+OK\r\n\x00", "not RESP2"},
	} {
		for _, piece := range []int{1, 3, len(tc.stream)} {
			err := scanSplit(testLimits, tc.stream, piece)
			if !errors.Is(err, errReply) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q in pieces of %d: %v, want %q", tc.stream, piece, err, tc.want)
			}
		}
	}
	// A failed scanner stays failed.
	sc := newRESPScanner(testLimits)
	sc.scan([]byte("%"))
	if err := sc.scan([]byte("+OK\r\n")); !errors.Is(err, errReply) {
		t.Fatal("a failed scanner accepted more")
	}
}

// The verdict on a stream does not depend on how it arrives, and no
// stream makes the scanner keep more state than its depth limit.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{"+PONG\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "$-1\r\n*-1\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n", "$3\r\nabc\r\n"} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, piece uint8) {
		whole := scanWhole(testLimits, string(b))
		split := scanSplit(testLimits, string(b), int(piece)%16+1)
		if (whole == nil) != (split == nil) || (whole != nil && whole.Error() != split.Error()) {
			t.Fatalf("whole: %v; in pieces of %d: %v", whole, int(piece)%16+1, split)
		}
		sc := newRESPScanner(testLimits)
		sc.scan(b)
		if len(sc.open) > testLimits.depth || cap(sc.open) > testLimits.depth {
			t.Fatalf("open arrays %d, cap %d", len(sc.open), cap(sc.open))
		}
	})
}

// The scanner's cost per reply, beside the network round trip it rides on
// (tens of microseconds on loopback).
func BenchmarkScanner(b *testing.B) {
	for _, size := range []int{48, 4 << 10, 1 << 20} {
		rec := "$" + strconv.Itoa(size) + "\r\n" + strings.Repeat("r", size) + "\r\n"
		b.Run("bulk-"+strconv.Itoa(size), func(b *testing.B) {
			lim := replyLimitsFor(2 << 20)
			sc := newRESPScanner(lim)
			buf := []byte(rec)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				for off := 0; off < len(buf); off += 32 << 10 { // as go-redis reads it
					if err := sc.scan(buf[off:min(off+32<<10, len(buf))]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
