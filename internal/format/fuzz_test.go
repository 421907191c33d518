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

// indexedSampleFile is the sample file as compaction writes it: the
// snapshot index, the chunks, then the same journal.
func indexedSampleFile() []byte {
	data := sampleFile()
	img := ReadContents(data, 0).Encode(time.Unix(1700000000, 0))
	var journal []byte
	end := int64(HeaderSize)
	Scan(data[HeaderSize:], HeaderSize, true, func(f Frame) {
		if ExtendsSnapshot(f, end) {
			end = f.End()
		} else if f.Type != TypeSnapshot {
			journal = append(journal, data[f.Off:f.End()]...)
		}
	}, nil)
	return append(img, journal...)
}

// Fuzz the frame scanner and the decoders on arbitrary bytes. Seeds: the
// sample file's frames (without and with a snapshot index) and a small
// build of every hostile class.
func FuzzScanFrames(f *testing.F) {
	data := sampleFile()
	f.Add(data[HeaderSize:])
	f.Add(data[HeaderSize : HeaderSize+40])
	f.Add(indexedSampleFile()[HeaderSize:])
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
				first := fr
				first.Off = HeaderSize
				if x, ok := DecodeSnapshotIndex(first, HeaderSize+int64(len(data))); ok {
					for _, ch := range x.Chunks {
						if ch.Off < first.End() || ch.Off+ch.Len > x.End || x.End > HeaderSize+int64(len(data)) {
							t.Fatalf("index accepted with chunk %+v, end %d", ch, x.End)
						}
						ChunkFor(x.Run(ch.Scope), ch.First)
					}
				}
			}, nil)
			if used < 0 || used > int64(len(data)) || (final && used != int64(len(data))) {
				t.Fatalf("consumed %d of %d (final %v)", used, len(data), final)
			}
		}
	})
}
