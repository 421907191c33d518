package hostile

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// Classes whose fake headers are damage by design; every other class is a
// run of frames that all check out.
var withFakeFrames = map[string]bool{
	"sync-storm": true, "sync-storm-tail": true, "sync-alternate": true,
	"damage-flood": true, "oversized": true,
}

// Every class starts with a valid header and, unless it plants fake
// headers on purpose, is a sequence of frames with correct checksums from
// the header to the last byte: a reader cannot dismiss it as damage.
func TestClassesCheckOut(t *testing.T) {
	for _, c := range Classes() {
		b := c.Build(min(c.Size, 64<<10), "s")
		if !bytes.Equal(b[:8], magic) || binary.LittleEndian.Uint32(b[28:]) != crc32.Checksum(b[:28], castagnoli) {
			t.Fatalf("%s: bad header", c.Name)
		}
		if withFakeFrames[c.Name] {
			continue
		}
		frames := 0
		for p := HeaderSize; p < len(b); frames++ {
			if len(b)-p < FrameHeader || !bytes.Equal(b[p:p+4], syncWord) {
				t.Fatalf("%s: no frame at %d", c.Name, p)
			}
			end := p + FrameHeader + int(binary.LittleEndian.Uint32(b[p+8:]))
			if end > len(b) {
				t.Fatalf("%s: frame at %d runs past the end", c.Name, p)
			}
			crc := crc32.Update(crc32.Checksum(b[p+4:p+12], castagnoli), castagnoli, b[p+FrameHeader:end])
			if crc != binary.LittleEndian.Uint32(b[p+12:]) {
				t.Fatalf("%s: frame at %d fails its checksum", c.Name, p)
			}
			p = end
		}
		if frames == 0 {
			t.Fatalf("%s: no frames", c.Name)
		}
	}
}

// A built zstd frame declares what its blocks decode to.
func TestZstdBuilder(t *testing.T) {
	z := &Zstd{}
	z.Raw([]byte("abc")).Run('x', 300<<10).Raw(make([]byte, 200<<10))
	if z.Size() != 3+300<<10+200<<10 {
		t.Fatalf("size %d", z.Size())
	}
	z.FCS = z.Size()
	b := z.Bytes()
	if !bytes.HasPrefix(b, []byte{0x28, 0xB5, 0x2F, 0xFD}) || len(b) > 210<<10 {
		t.Fatalf("frame of %d bytes", len(b))
	}
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	out, err := dec.DecodeAll(b, nil)
	want := append(append([]byte("abc"), bytes.Repeat([]byte{'x'}, 300<<10)...), make([]byte, 200<<10)...)
	if err != nil || !bytes.Equal(out, want) {
		t.Fatalf("decodes to %d bytes, %v", len(out), err)
	}
}
