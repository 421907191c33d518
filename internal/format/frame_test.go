package format

import (
	"bytes"
	"fmt"
	"testing"
)

func testFrames(n int) ([]byte, [][2]int) {
	var b []byte
	var spans [][2]int
	for i := 0; i < n; i++ {
		start := len(b)
		b = AppendPutFrame(b, 7, int64(i), []byte(fmt.Sprintf("key-%d", i)), bytes.Repeat([]byte{byte(i)}, i*3))
		spans = append(spans, [2]int{start, len(b)})
	}
	return b, spans
}

func collect(b []byte, final bool) (keys []string, dmg []Damage, used int64) {
	used = Scan(b, 100, final, func(f Frame) {
		p, ok := DecodePut(f.Payload)
		if !ok {
			panic("valid frame with bad put")
		}
		keys = append(keys, string(p.Key))
	}, func(d Damage) { dmg = append(dmg, d) })
	return
}

func TestScanFramesRoundTrip(t *testing.T) {
	b, _ := testFrames(20)
	keys, dmg, used := collect(b, false)
	if len(keys) != 20 || len(dmg) != 0 || used != int64(len(b)) {
		t.Fatalf("keys %d dmg %v used %d/%d", len(keys), dmg, used, len(b))
	}
}

// A damaged frame in the middle costs that frame only.
func TestScanFramesResync(t *testing.T) {
	b, spans := testFrames(10)
	for _, off := range []int{0, 4, 9, 13, 20} { // sync, type, length, crc, payload
		c := bytes.Clone(b)
		c[spans[4][0]+off] ^= 0x40
		keys, dmg, used := collect(c, false)
		if len(keys) != 9 || used != int64(len(c)) || len(dmg) != 1 {
			t.Fatalf("offset %d: %d keys, damage %v, used %d", off, len(keys), dmg, used)
		}
		if dmg[0].Off != 100+int64(spans[4][0]) || dmg[0].Len != int64(spans[4][1]-spans[4][0]) {
			t.Fatalf("offset %d: damage %+v, want frame 4 at %v", off, dmg[0], spans[4])
		}
		for _, k := range keys {
			if k == "key-4" {
				t.Fatal("damaged frame returned")
			}
		}
	}
}

// An unfinished tail is left alone unless the caller holds the lock.
func TestScanFramesTail(t *testing.T) {
	b, spans := testFrames(5)
	cut := spans[4][0] + 10
	keys, dmg, used := collect(b[:cut], false)
	if len(keys) != 4 || len(dmg) != 0 || used != int64(spans[4][0]) {
		t.Fatalf("non-final: %d keys, %v, used %d", len(keys), dmg, used)
	}
	keys, dmg, used = collect(b[:cut], true)
	if len(keys) != 4 || len(dmg) != 1 || used != int64(cut) {
		t.Fatalf("final: %d keys, %v, used %d", len(keys), dmg, used)
	}
	// Garbage, then a frame still being written: wait for it.
	g := append(bytes.Clone(b[:spans[1][1]]), []byte("garbage!garbage!garbage!")...)
	partial := append(bytes.Clone(g), b[spans[2][0]:spans[2][0]+20]...)
	keys, _, used = collect(partial, false)
	if len(keys) != 2 || used != int64(spans[1][1]) {
		t.Fatalf("garbage+partial: %d keys used %d", len(keys), used)
	}
	// Once that frame is complete, the garbage is skipped.
	whole := append(bytes.Clone(g), b[spans[2][0]:]...)
	keys, dmg, used = collect(whole, false)
	if len(keys) != 5 || len(dmg) != 1 || used != int64(len(whole)) {
		t.Fatalf("garbage+frames: %d keys %v used %d", len(keys), dmg, used)
	}
}
