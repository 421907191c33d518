package format

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

// Damage and torn tails. A file is its snapshot, then its journal (see
// ExtendsSnapshot). Compaction writes the snapshot whole and syncs it before
// it renames the file into place, so nothing in a snapshot is ever being
// written or cut short: damage there is corruption, wherever it falls.
// Writers append to the journal only, one write at a time, and a writer
// killed in the middle of a write leaves a prefix of what it wrote: valid
// frames, then the start of one frame. That start, after the last complete
// frame, is a torn tail; it is the only damage a writer may remove. Every
// other damaged region is reported, counted, kept until a rewrite, and
// saved beside the file when a rewrite drops it.
//
// Where the snapshot ends is known from the snapshot index (its End). A file
// without an index (written before indexes existed, or whose index is
// damaged) has a snapshot whose end is only known as far as its valid
// frames go; there the bytes decide alone (TornTail).

// IndexedEnd returns where the snapshot of the file image b ends, as its
// snapshot index says, if b has an index that is a valid frame and well
// formed (DecodeSnapshotIndex: its chunks and its end within b).
func IndexedEnd(b []byte) (int64, bool) {
	if len(b) < HeaderSize {
		return 0, false
	}
	n := FrameLen(b[HeaderSize:])
	if n == 0 || HeaderSize+n > int64(len(b)) {
		return 0, false
	}
	f, ok := ParseFrame(b[HeaderSize:HeaderSize+n], HeaderSize)
	if !ok {
		return 0, false
	}
	x, ok := DecodeSnapshotIndex(f, int64(len(b)))
	return x.End, ok
}

// ScanFile is Scan for bytes of a file whose snapshot is known to end at
// snapEnd (HeaderSize when the caller does not know it). The snapshot is
// never being written, so damage that starts in it is declared even when
// final is false, as far as snapEnd; and no damaged region is reported
// across snapEnd: what lies after it is the journal's, reported apart, and
// only that part can be a torn tail (TornTail).
func ScanFile(b []byte, base, snapEnd int64, final bool, fn func(Frame), bad func(Damage)) int64 {
	end := base + int64(len(b))
	report := func(d Damage) {
		if bad == nil {
			return
		}
		if d.Off < snapEnd && d.Off+d.Len > snapEnd {
			bad(Damage{Off: d.Off, Len: snapEnd - d.Off})
			d = Damage{Off: snapEnd, Len: d.Off + d.Len - snapEnd}
		}
		bad(d)
	}
	n := Scan(b, base, final, fn, report)
	if p := base + n; p < min(snapEnd, end) {
		// An unfinished region that starts in the snapshot: no valid frame
		// follows it, and nobody is writing it.
		report(Damage{Off: p, Len: min(snapEnd, end) - p})
		n = min(snapEnd, end) - base
	}
	return n
}

// TornTail reports whether d, the damaged region a final scan found at the
// end of a file, is a torn tail: an append cut short, which loses nothing
// acknowledged and which the next writer may remove. tail holds its bytes
// (d.Len of them); snapEnd is where the file's snapshot ends as far as the
// reader knows it (the index's end, else the end of the leading run of
// snapshot and pad frames).
//
// A torn tail starts in the journal, at or after snapEnd, and is the start
// of one frame a writer appends (put, scope, touch, or a type this version
// does not know; never a snapshot or pad frame): the sync word or a prefix
// of it, the reserved bytes zero, and a payload length of more than the
// bytes that follow. Anything else is damage: a complete frame that fails
// its checksum, a damaged sync word, a snapshot frame, and a complete frame
// whose length field was damaged (its bytes check out with the length they
// really have). So a single flipped bit anywhere in a file is never a torn
// tail, whether or not the file has an index.
func TornTail(d Damage, snapEnd int64, tail []byte) bool {
	return d.Off >= snapEnd && int64(len(tail)) == d.Len && tornFrame(tail)
}

// tornFrame reports whether b is a strict prefix of a journal frame.
func tornFrame(b []byte) bool {
	n := len(b)
	if n == 0 || !bytes.HasPrefix(syncBytes, b[:min(n, len(syncBytes))]) {
		return false
	}
	if n > 4 && (b[4] == 0 || b[4] == TypeSnapshot || b[4] == TypePad) {
		return false
	}
	if n >= 8 && binary.LittleEndian.Uint16(b[6:]) != 0 {
		return false
	}
	if n < 12 {
		return true
	}
	plen := binary.LittleEndian.Uint32(b[8:])
	if plen > MaxFramePayload || FrameHeaderSize+int(plen) <= n {
		return false // it claims no more than is there: complete, and damaged
	}
	if n >= FrameHeaderSize {
		var l [4]byte
		binary.LittleEndian.PutUint32(l[:], uint32(n-FrameHeaderSize))
		crc := crc32.Update(0, castagnoli, b[4:8])
		crc = crc32.Update(crc, castagnoli, l[:])
		crc = crc32.Update(crc, castagnoli, b[FrameHeaderSize:])
		if crc == binary.LittleEndian.Uint32(b[12:]) {
			return false // a whole frame whose length field was damaged
		}
	}
	return true
}
