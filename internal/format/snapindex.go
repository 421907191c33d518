package format

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"sort"
)

// The snapshot index lists a compacted file's snapshot chunks, so that a
// reader can decode the one chunk that may hold a key without reading the
// others. It is a pad frame (type 5) with the flag PadIndex, the first frame
// after the header, and it is part of the snapshot (ExtendsSnapshot): a
// reader that does not know it skips it as it skips any pad frame, and its
// idea of where the journal starts is unchanged. The layout is drawn in
// package cache (cache/doc.go).
//
// Like everything in a file, the index is a hint. DecodeSnapshotIndex
// checks that it is well formed and consistent with the file's size; a
// reader that decodes a chunk through it checks that the chunk is the one
// the index describes (IndexedChunk.Holds) before it trusts the index for
// that chunk's keys.

// PadIndex is a pad frame's flag: its payload is the snapshot index.
const PadIndex = 1

// indexLayout is the version of the index payload's layout. An index of
// another layout is not used (the file is read whole, as one without an
// index); it changes without a new file format version, since a reader
// that does not use an index reads the file correctly.
const indexLayout = 1

// indexHead is the payload's fixed prefix: layout u8, snapshot end u64.
const indexHead = 9

// minIndexedChunk is the fewest bytes one chunk takes in the index: a scope
// hash, three one-byte uvarints and a key of one byte.
const minIndexedChunk = 8 + 3 + 1

// IndexedChunk is one snapshot chunk as the index describes it.
type IndexedChunk struct {
	Scope uint64
	Off   int64  // file offset of the chunk's frame
	Len   int64  // bytes of the frame, its header included
	Count uint32 // entries in the chunk
	First []byte // the chunk's first key (aliases the index payload)
}

// SnapshotIndex is a decoded snapshot index.
type SnapshotIndex struct {
	// End is where the snapshot ends: after the last chunk and the pad
	// frames that follow it. The journal starts here.
	End int64
	// Chunks are in file order, which is by scope hash, then by key: the
	// first chunk starts right after the index frame, and each one right
	// after the one before.
	Chunks []IndexedChunk
}

// AppendSnapshotIndex appends an index frame listing chunks, which will
// follow it directly, and the snapshot's end (Encode writes 0, then
// setSnapshotEnd once the snapshot is complete; tests write indexes of
// their own).
func AppendSnapshotIndex(dst []byte, chunks []IndexedChunk, end int64) []byte {
	p := make([]byte, indexHead, indexHead+binary.MaxVarintLen64+len(chunks)*(8+3*binary.MaxVarintLen32+128))
	p[0] = indexLayout
	binary.LittleEndian.PutUint64(p[1:], uint64(end))
	p = binary.AppendUvarint(p, uint64(len(chunks)))
	for _, ch := range chunks {
		p = binary.LittleEndian.AppendUint64(p, ch.Scope)
		p = binary.AppendUvarint(p, uint64(ch.Len))
		p = binary.AppendUvarint(p, uint64(ch.Count))
		p = binary.AppendUvarint(p, uint64(len(ch.First)))
		p = append(p, ch.First...)
	}
	return AppendFrame(dst, TypePad, PadIndex, p)
}

// setSnapshotEnd stores end in the index frame at the start of b, and
// seals the frame again.
func setSnapshotEnd(b []byte, end int64) {
	binary.LittleEndian.PutUint64(b[FrameHeaderSize+1:], uint64(end))
	Reseal(b)
}

// Reseal recomputes the checksum of the frame at the start of b after its
// payload was changed in place.
func Reseal(b []byte) {
	plen := binary.LittleEndian.Uint32(b[8:])
	crc := crc32.Update(0, castagnoli, b[4:12])
	crc = crc32.Update(crc, castagnoli, b[FrameHeaderSize:FrameHeaderSize+plen])
	binary.LittleEndian.PutUint32(b[12:], crc)
}

// DecodeSnapshotIndex decodes f, the first frame of a file of size bytes,
// if it is a snapshot index that is well formed: every count and length
// bounded by the bytes that carry it, the chunks in order (scope hash, then
// first key, strictly increasing) and within the file, the snapshot's end
// after the last chunk and within the file.
func DecodeSnapshotIndex(f Frame, size int64) (SnapshotIndex, bool) {
	p := f.Payload
	if f.Type != TypePad || f.Flags&PadIndex == 0 || f.Off != HeaderSize ||
		len(p) < indexHead || p[0] != indexLayout {
		return SnapshotIndex{}, false
	}
	x := SnapshotIndex{End: int64(min(binary.LittleEndian.Uint64(p[1:]), math.MaxInt64))}
	p = p[indexHead:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k)/minIndexedChunk {
		return SnapshotIndex{}, false
	}
	p = p[k:]
	x.Chunks = make([]IndexedChunk, 0, n)
	off := f.End()
	for range n {
		if len(p) < 8 {
			return SnapshotIndex{}, false
		}
		ch := IndexedChunk{Scope: binary.LittleEndian.Uint64(p), Off: off}
		p = p[8:]
		var v [3]uint64
		for j := range v {
			if v[j], k = binary.Uvarint(p); k <= 0 {
				return SnapshotIndex{}, false
			}
			p = p[k:]
		}
		flen, count, klen := v[0], v[1], v[2]
		if flen < FrameHeaderSize+12 || flen > FrameHeaderSize+MaxFramePayload || count > math.MaxUint32 ||
			klen == 0 || klen > MaxKeySize || klen > uint64(len(p)) {
			return SnapshotIndex{}, false
		}
		ch.Len, ch.Count, ch.First = int64(flen), uint32(count), p[:klen:klen]
		p = p[klen:]
		if m := len(x.Chunks); m > 0 {
			prev := &x.Chunks[m-1]
			if prev.Scope > ch.Scope || (prev.Scope == ch.Scope && bytes.Compare(prev.First, ch.First) >= 0) {
				return SnapshotIndex{}, false
			}
		}
		if off += ch.Len; off > size {
			return SnapshotIndex{}, false
		}
		x.Chunks = append(x.Chunks, ch)
	}
	if len(p) != 0 || x.End < off || x.End > size {
		return SnapshotIndex{}, false
	}
	return x, true
}

// Run returns the chunks of one scope, in key order.
func (x SnapshotIndex) Run(scope uint64) []IndexedChunk {
	lo := sort.Search(len(x.Chunks), func(i int) bool { return x.Chunks[i].Scope >= scope })
	hi := lo + sort.Search(len(x.Chunks)-lo, func(i int) bool { return x.Chunks[lo+i].Scope > scope })
	return x.Chunks[lo:hi:hi]
}

// ChunkFor returns the position in run (one scope's chunks, in key order)
// of the chunk that holds key if any does, or -1 when key sorts before
// every chunk.
func ChunkFor(run []IndexedChunk, key []byte) int {
	return sort.Search(len(run), func(i int) bool { return bytes.Compare(run[i].First, key) > 0 }) - 1
}

// Holds reports whether recs, the records of the snapshot frame ch
// describes, are what the index says: as many as it says, keys strictly
// increasing from ch.First, and all before next, the first key of the
// scope's next chunk (nil if none). When every chunk of a scope holds what
// the index says, a key can only be in the chunk ChunkFor names.
func (ch IndexedChunk) Holds(recs []Record, next []byte) bool {
	if len(recs) == 0 || uint64(len(recs)) != uint64(ch.Count) || !bytes.Equal(recs[0].Key, ch.First) {
		return false
	}
	for i := 1; i < len(recs); i++ {
		if bytes.Compare(recs[i-1].Key, recs[i].Key) >= 0 {
			return false
		}
	}
	return next == nil || bytes.Compare(recs[len(recs)-1].Key, next) < 0
}

// ParseFrame returns the frame b holds, read from file offset off, if b is
// exactly one complete, valid frame.
func ParseFrame(b []byte, off int64) (Frame, bool) {
	if len(b) < FrameHeaderSize || frameAt(b) != len(b) {
		return Frame{}, false
	}
	return Frame{Off: off, Type: b[4], Flags: b[5], Payload: b[FrameHeaderSize:]}, true
}

// FrameLen returns the length, header included, that the frame header at
// the start of b claims, or 0 if b does not start with a frame header that
// could be valid. The frame is not checked: ParseFrame does that once it
// is read whole.
func FrameLen(b []byte) int64 {
	if len(b) < FrameHeaderSize || binary.LittleEndian.Uint32(b) != frameSync || binary.LittleEndian.Uint16(b[6:]) != 0 {
		return 0
	}
	n := binary.LittleEndian.Uint32(b[8:])
	if n > MaxFramePayload {
		return 0
	}
	return FrameHeaderSize + int64(n)
}
