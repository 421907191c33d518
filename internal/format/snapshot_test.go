package format

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/convcache/convcache/internal/hostile"
)

// A chunk declaring more than a writer can produce is damage, without
// being decoded; so is one beyond what is left of the budget.
func TestChunkBounds(t *testing.T) {
	z := &hostile.Zstd{}
	z.Raw(hostile.ChunkHead("s")).Run(0, maxChunkRaw+1)
	z.FCS = z.Size()
	over := Frame{Type: TypeSnapshot, Flags: FrameZstd, Payload: append(make([]byte, 12), z.Bytes()...)}
	b := NewBudget(1 << 30)
	if _, _, err := decodeChunk(over, nil, false, &b); err != errBadSnapshot {
		t.Fatalf("a chunk of %d bytes: %v", maxChunkRaw+1, err)
	}
	if b.left != NewBudget(1<<30).left {
		t.Fatalf("a refused chunk was charged")
	}
	z = &hostile.Zstd{}
	z.Raw(hostile.ChunkHead("s")).Run(0, 1000)
	z.FCS = z.Size()
	ok := Frame{Type: TypeSnapshot, Flags: FrameZstd, Payload: append(make([]byte, 12), z.Bytes()...)}
	b = Budget{left: z.Size() - 1}
	if _, _, err := decodeChunk(ok, nil, false, &b); err != errOverBudget || b.left != z.Size()-1 {
		t.Fatalf("a chunk one byte over the budget: %v, %d left", err, b.left)
	}
	b = Budget{left: z.Size()}
	if body, _, err := decodeChunk(ok, nil, false, &b); err != nil || int64(len(body)) != z.Size() || b.left != 0 {
		t.Fatalf("a chunk that fits exactly: %v, %d bytes, %d left", err, len(body), b.left)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	var recs []Record
	for i := 0; i < 5000; i++ { // several chunks
		recs = append(recs, Record{
			Key:      []byte(fmt.Sprintf("key-%06d-%s", i, bytes.Repeat([]byte("x"), i%50))),
			Value:    bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 24),
			Inserted: 1700000000000 + int64(i),
			Used:     1700000000000 + int64(2*i),
		})
	}
	buf, _, _ := AppendSnapshotFrames(nil, 42, "scope-x", recs, nil)
	budget := NewBudget(int64(len(buf)))
	var got []Record
	chunks := 0
	Scan(buf, 0, true, func(f Frame) {
		chunks++
		scope, out, _, err := DecodeSnapshot(f, nil, nil, true, &budget)
		if err != nil || scope != "scope-x" {
			t.Fatalf("chunk: %v %q", err, scope)
		}
		got = append(got, out...)
	}, func(d Damage) { t.Fatalf("damage %+v", d) })
	if chunks < 2 || len(got) != len(recs) {
		t.Fatalf("%d chunks, %d records", chunks, len(got))
	}
	for i := range recs {
		if !bytes.Equal(got[i].Key, recs[i].Key) || !bytes.Equal(got[i].Value, recs[i].Value) ||
			got[i].Inserted != recs[i].Inserted || got[i].Used != recs[i].Used {
			t.Fatalf("record %d differs", i)
		}
	}
	// Raw bytes of keys and values vs the snapshot.
	raw := 0
	for _, r := range recs {
		raw += len(r.Key) + len(r.Value)
	}
	t.Logf("%d records: %d raw bytes, %d snapshot bytes (%.0f%%)", len(recs), raw, len(buf), 100*float64(len(buf))/float64(raw))
}
