package format

import (
	"encoding/binary"
	"hash/crc32"
)

// Frames. The layout is drawn in package cache (cache/doc.go).
const (
	FrameHeaderSize = 16

	// MaxFramePayload bounds a frame's payload. A length beyond it marks a
	// damaged frame rather than a request to read gigabytes.
	MaxFramePayload = 64 << 20

	frameSync = 0x524343E7 // "\xE7CCR" little-endian
)

// Frame types.
const (
	TypePut      = 1 // one entry: scope hash, time, key, value
	TypeScope    = 2 // names a scope hash
	TypeTouch    = 3 // key hashes of a scope used since the last touch frame
	TypeSnapshot = 4 // a compressed chunk of one scope's entries
	TypePad      = 5 // ignored bytes that keep a file's decode budget honest, or (PadIndex) the snapshot index

	// Readers skip frame types they do not know.
)

// FrameZstd marks a snapshot payload whose body is zstd-compressed.
const FrameZstd = 1

// Frame is one frame found by Scan. Payload aliases the scanned buffer.
type Frame struct {
	Off     int64 // file offset of the frame header
	Type    byte
	Flags   byte
	Payload []byte
}

// End is the file offset just past the frame.
func (f Frame) End() int64 { return f.Off + FrameHeaderSize + int64(len(f.Payload)) }

// ExtendsSnapshot reports whether f continues a file's leading snapshot,
// which so far ends at end: a snapshot or pad frame that starts exactly
// there. The snapshot is the run of such frames after the header (the
// snapshot index, a pad frame, included); the journal starts where it ends.
// Scan's frames come in file order, so
//
//	if format.ExtendsSnapshot(f, end) { end = f.End() }
//
// starting from end = HeaderSize finds it.
func ExtendsSnapshot(f Frame, end int64) bool {
	return (f.Type == TypeSnapshot || f.Type == TypePad) && f.Off == end
}

// Damage is a byte range that held no valid frame.
type Damage struct {
	Off, Len int64
}

// AppendFrame appends one frame with the given payload to dst.
func AppendFrame(dst []byte, typ, flags byte, payload []byte) []byte {
	var h [FrameHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], frameSync)
	h[4] = typ
	h[5] = flags
	binary.LittleEndian.PutUint32(h[8:], uint32(len(payload)))
	crc := crc32.Update(0, castagnoli, h[4:12])
	crc = crc32.Update(crc, castagnoli, payload)
	binary.LittleEndian.PutUint32(h[12:], crc)
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

// frameAt returns the length of the complete, valid frame at b[0:], or 0.
func frameAt(b []byte) int {
	s := scanner{b: b}
	return s.frameLen(0, MaxFramePayload)
}

var syncBytes = []byte{0xE7, 'C', 'C', 'R'}

// Scan walks the frames in b, which holds the file bytes starting at
// file offset base, and calls fn for each valid frame in order.
//
// A damaged region (bad sync word, length or checksum) is skipped when a valid
// frame follows it, and reported through bad. What happens at the end of b
// depends on final: a writer may be appending right now, so when final is
// false an unfinished or unverifiable tail is left for a later scan; when
// final is true (the caller holds the file lock, so nobody is writing) the
// tail is declared damaged and consumed.
//
// Scan returns the number of bytes consumed: the offset after the last
// frame or damaged region it accounted for.
//
// The work is linear in len(b) whatever b holds (see scanner): a frame the
// scan has not yet seen is checked directly only when its claim is small or
// covered by the bytes of valid frames already read; any other claim, and
// every candidate while resynchronising, is checked through checkpoints.
func Scan(b []byte, base int64, final bool, fn func(Frame), bad func(Damage)) int64 {
	s := scanner{b: b}
	defer func() { crcWork.Add(s.work) }()
	// credit is how large a claim may be checked directly: a first
	// allowance (a frame at the start of a scan is most likely valid), plus
	// the valid bytes read, less what direct checks of failed claims cost.
	// Direct checks therefore waste at most InitialCredit plus the valid
	// bytes of a scan.
	credit := InitialCredit
	p := 0
	for p < len(b) {
		n := s.frameLen(p, uint32(max(credit, crcStride)))
		if n > 0 {
			fn(Frame{Off: base + int64(p), Type: b[p+4], Flags: b[p+5], Payload: b[p+FrameHeaderSize : p+n]})
			p += n
			credit += n
			continue
		}
		if claim := claimedPayload(b[p:]); claim <= max(credit, crcStride) {
			credit -= claim
		}
		q := s.next(p + 1)
		if q < 0 {
			if !final {
				// Possibly a write in progress: look again later. A damaged
				// region is only declared once a valid frame follows it.
				return int64(p)
			}
			q = len(b)
		}
		if bad != nil {
			bad(Damage{Off: base + int64(p), Len: int64(q - p)})
		}
		p = q
	}
	return int64(p)
}

// InitialCredit is what direct checks may waste in one scan before any
// valid frame was read: more than a snapshot chunk, so that a file without
// damage is never checked through checkpoints.
const InitialCredit = 2 << 20

// claimedPayload returns the payload length a plausible frame header at
// b[0:] claims, or 0.
func claimedPayload(b []byte) int {
	if len(b) < FrameHeaderSize || binary.LittleEndian.Uint32(b) != frameSync {
		return 0
	}
	return int(min(binary.LittleEndian.Uint32(b[8:]), MaxFramePayload))
}
