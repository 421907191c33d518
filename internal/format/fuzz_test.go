package format

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/convcache/convcache/internal/hostile"
)

// sampleFile is a small file of every frame type the engine reads: two
// scopes' snapshot chunks, a scope frame and puts. (The engine's
// corruption tests in package cache build the same file and track which
// bytes hold which entry.)
func sampleFile() []byte {
	const scope = "fuzz-scope"
	h := ScopeHash(scope)
	data := EncodeHeader(time.Unix(1700000000, 0), 0)
	var recs []Record
	for i := 0; i < 6; i++ {
		recs = append(recs, Record{Key: []byte(fmt.Sprintf("snap-key-%d", i)), Value: []byte(fmt.Sprintf("snap-value-%d", i)), Inserted: 1, Used: 2})
	}
	data, _, _ = AppendSnapshotFrames(data, h, scope, recs, nil)
	data, _, _ = AppendSnapshotFrames(data, 99, "other", []Record{{Key: []byte("other-key"), Value: []byte("other-value"), Inserted: 1, Used: 1}}, nil)
	data = AppendScopeFrame(data, h, scope)
	for i := 0; i < 8; i++ {
		k, v := []byte(fmt.Sprintf("journal-key-%d", i)), []byte(fmt.Sprintf("journal-value-%d-%s", i, bytes.Repeat([]byte{'x'}, i*7)))
		data = AppendPutFrame(data, h, int64(i), k, v)
	}
	return AppendPutFrame(data, 99, 0, []byte("journal-other"), []byte("x"))
}

// Fuzz the frame scanner and the decoders on arbitrary bytes. Seeds: the
// sample file's frames and a small build of every hostile class.
func FuzzScanFrames(f *testing.F) {
	data := sampleFile()
	f.Add(data[HeaderSize:])
	f.Add(data[HeaderSize : HeaderSize+40])
	for _, c := range hostile.Classes() {
		f.Add(c.Build(min(c.Size, 4<<10), "fuzz-scope")[HeaderSize:])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, final := range []bool{false, true} {
			used := Scan(data, 0, final, func(fr Frame) {
				n := FrameHeaderSize + len(fr.Payload)
				if frameAt(data[fr.Off:]) != n {
					t.Fatalf("reported frame at %d does not check out", fr.Off)
				}
				DecodePut(fr.Payload)
				DecodeScope(fr.Payload)
				budget := NewBudget(int64(len(data)))
				DecodeSnapshot(fr, nil, nil, false, &budget)
			}, nil)
			if used < 0 || used > int64(len(data)) || (final && used != int64(len(data))) {
				t.Fatalf("consumed %d of %d (final %v)", used, len(data), final)
			}
		}
	})
}
