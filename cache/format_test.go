package cache

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestHeaderRoundTrip(t *testing.T) {
	now := time.Unix(1700000000, 123)
	h, err := decodeHeader(encodeHeader(now, 0))
	if err != nil || h.version != FormatVersion || !h.created.Equal(now) {
		t.Fatalf("got %+v, %v", h, err)
	}
}

// The header is validated in a fixed order, each failure its own error.
func TestHeaderValidationOrder(t *testing.T) {
	good := encodeHeader(time.Now(), 0)
	mut := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	cases := []struct {
		name string
		in   []byte
		want error
		is   error
	}{
		{"empty", nil, errEmpty, ErrFormat},
		{"truncated", good[:10], errTruncatedHeader, ErrCorrupt},
		{"short foreign", []byte("hello"), errForeign, ErrFormat},
		{"foreign", []byte("#!/bin/sh\necho this is a shell script....\n"), errForeign, ErrFormat},
		{"newer", mut(func(b []byte) { b[8] = 2 }), errNewer, ErrFormat},
		{"newer and bad sum", mut(func(b []byte) { b[8] = 9; b[29] ^= 1 }), errNewer, ErrFormat},
		{"bad sum", mut(func(b []byte) { b[17] ^= 4 }), errHeaderChecksum, ErrCorrupt},
		{"version zero", mut(func(b []byte) { b[8] = 0 }), errHeaderChecksum, ErrCorrupt},
		{"bad size", mut(func(b []byte) { b[12] = 33 }), errHeaderChecksum, ErrCorrupt},
	}
	for _, c := range cases {
		_, err := decodeHeader(c.in)
		if err != c.want || !errors.Is(err, c.is) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

func testFrames(n int) ([]byte, [][2]int) {
	var b []byte
	var spans [][2]int
	for i := 0; i < n; i++ {
		start := len(b)
		b = appendPutFrame(b, 7, int64(i), []byte(fmt.Sprintf("key-%d", i)), bytes.Repeat([]byte{byte(i)}, i*3))
		spans = append(spans, [2]int{start, len(b)})
	}
	return b, spans
}

func collect(b []byte, final bool) (keys []string, dmg []damage, used int64) {
	used = scanFrames(b, 100, final, func(f frame) {
		p, ok := decodePut(f.payload)
		if !ok {
			panic("valid frame with bad put")
		}
		keys = append(keys, string(p.key))
	}, func(d damage) { dmg = append(dmg, d) })
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
		if dmg[0].off != 100+int64(spans[4][0]) || dmg[0].len != int64(spans[4][1]-spans[4][0]) {
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

func TestSnapshotRoundTrip(t *testing.T) {
	var recs []record
	for i := 0; i < 5000; i++ { // several chunks
		recs = append(recs, record{
			key:      []byte(fmt.Sprintf("key-%06d-%s", i, bytes.Repeat([]byte("x"), i%50))),
			value:    bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 24),
			inserted: 1700000000000 + int64(i),
			used:     1700000000000 + int64(2*i),
		})
	}
	buf, _, _ := appendSnapshotFrames(nil, 42, "scope-x", recs, nil)
	budget := newDecodeBudget(int64(len(buf)))
	var got []record
	chunks := 0
	scanFrames(buf, 0, true, func(f frame) {
		chunks++
		scope, out, _, err := decodeSnapshot(f, nil, nil, true, &budget)
		if err != nil || scope != "scope-x" {
			t.Fatalf("chunk: %v %q", err, scope)
		}
		got = append(got, out...)
	}, func(d damage) { t.Fatalf("damage %+v", d) })
	if chunks < 2 || len(got) != len(recs) {
		t.Fatalf("%d chunks, %d records", chunks, len(got))
	}
	for i := range recs {
		if !bytes.Equal(got[i].key, recs[i].key) || !bytes.Equal(got[i].value, recs[i].value) ||
			got[i].inserted != recs[i].inserted || got[i].used != recs[i].used {
			t.Fatalf("record %d differs", i)
		}
	}
	// Raw bytes of keys and values vs the snapshot.
	raw := 0
	for _, r := range recs {
		raw += len(r.key) + len(r.value)
	}
	t.Logf("%d records: %d raw bytes, %d snapshot bytes (%.0f%%)", len(recs), raw, len(buf), 100*float64(len(buf))/float64(raw))
}
