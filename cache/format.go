package cache

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"time"
)

// On-disk constants. See the package documentation for the layout.
const (
	// FormatVersion is the newest file format this package reads and the one
	// it writes.
	FormatVersion = 1

	headerSize  = 32
	frameHeader = 16

	// maxFramePayload bounds a frame's payload. A length beyond it marks a
	// damaged frame rather than a request to read gigabytes.
	maxFramePayload = 64 << 20

	frameSync = 0x524343E7 // "\xE7CCR" little-endian
)

// Frame types.
const (
	framePut      = 1 // one entry: scope hash, time, key, value
	frameScope    = 2 // names a scope hash
	frameTouch    = 3 // key hashes of a scope used since the last touch frame
	frameSnapshot = 4 // a compressed chunk of one scope's entries
	framePad      = 5 // ignored bytes that keep a file's decode budget honest

	// Readers skip frame types they do not know.
)

// frameFlagZstd marks a snapshot payload whose body is zstd-compressed.
const frameFlagZstd = 1

var fileMagic = [8]byte{0x89, 'C', 'C', 'D', 'B', '\r', '\n', 0x1a}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header flags.
const (
	// headerCompacted marks a file written by compaction (or a tool that
	// writes a compacted file), as opposed to one created empty by a
	// writer: its created time is then the last compaction. Files written
	// before the flag existed have no flags; a snapshot right after the
	// header tells the same there.
	headerCompacted = 1
)

// header is the decoded file header.
type header struct {
	version uint32
	created time.Time // when this file generation was written
	flags   uint32
}

// encodeHeader returns a header for a file written at created, with flags.
func encodeHeader(created time.Time, flags uint32) []byte {
	b := make([]byte, headerSize)
	copy(b, fileMagic[:])
	binary.LittleEndian.PutUint32(b[8:], FormatVersion)
	binary.LittleEndian.PutUint32(b[12:], headerSize)
	binary.LittleEndian.PutUint64(b[16:], uint64(created.UnixNano()))
	binary.LittleEndian.PutUint32(b[24:], flags)
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	return b
}

// decodeHeader validates a header in a fixed order: size, magic, version,
// checksum. Each failure has its own error, so a foreign file, a newer format
// and a damaged header are told apart.
func decodeHeader(b []byte) (header, error) {
	if len(b) == 0 {
		return header{}, errEmpty
	}
	if len(b) < headerSize {
		if bytes.HasPrefix(fileMagic[:], b) || bytes.HasPrefix(b, fileMagic[:]) {
			return header{}, errTruncatedHeader
		}
		return header{}, errForeign
	}
	if !bytes.Equal(b[:8], fileMagic[:]) {
		return header{}, errForeign
	}
	v := binary.LittleEndian.Uint32(b[8:])
	if v > FormatVersion {
		return header{version: v}, errNewer
	}
	if v == 0 || binary.LittleEndian.Uint32(b[12:]) != headerSize ||
		binary.LittleEndian.Uint32(b[28:]) != crc32.Checksum(b[:28], castagnoli) {
		return header{}, errHeaderChecksum
	}
	return header{
		version: v,
		created: time.Unix(0, int64(binary.LittleEndian.Uint64(b[16:]))),
		flags:   binary.LittleEndian.Uint32(b[24:]),
	}, nil
}

// appendFrame appends one frame with the given payload to dst.
func appendFrame(dst []byte, typ, flags byte, payload []byte) []byte {
	var h [frameHeader]byte
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

// appendPutFrame appends a put frame without building the payload separately.
func appendPutFrame(dst []byte, scopeHash uint64, t int64, key, value []byte) []byte {
	start := len(dst)
	var h [frameHeader]byte
	dst = append(dst, h[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, scopeHash)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(t))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = append(dst, value...)
	fh := dst[start : start+frameHeader]
	binary.LittleEndian.PutUint32(fh[0:], frameSync)
	fh[4] = framePut
	fh[5] = 0
	binary.LittleEndian.PutUint32(fh[8:], uint32(len(dst)-start-frameHeader))
	crc := crc32.Update(0, castagnoli, fh[4:12])
	crc = crc32.Update(crc, castagnoli, dst[start+frameHeader:])
	binary.LittleEndian.PutUint32(fh[12:], crc)
	return dst
}

// put is a decoded put frame. Its slices alias the frame.
type put struct {
	scope uint64
	time  int64 // unix milliseconds
	key   []byte
	value []byte
}

func decodePut(p []byte) (put, bool) {
	if len(p) < 17 {
		return put{}, false
	}
	klen, n := binary.Uvarint(p[16:])
	if n <= 0 || klen == 0 || klen > MaxKeySize {
		return put{}, false
	}
	rest := p[16+n:]
	if uint64(len(rest)) < klen || uint64(len(rest))-klen > MaxValueSize {
		return put{}, false
	}
	return put{
		scope: binary.LittleEndian.Uint64(p),
		time:  int64(binary.LittleEndian.Uint64(p[8:])),
		key:   rest[:klen],
		value: rest[klen:],
	}, true
}

func encodeScopeFrame(dst []byte, hash uint64, scope string) []byte {
	p := make([]byte, 8, 8+len(scope))
	binary.LittleEndian.PutUint64(p, hash)
	p = append(p, scope...)
	return appendFrame(dst, frameScope, 0, p)
}

func decodeScope(p []byte) (uint64, string, bool) {
	if len(p) < 8 || len(p)-8 > MaxScopeSize {
		return 0, "", false
	}
	return binary.LittleEndian.Uint64(p), string(p[8:]), true
}

// frame is one frame found by scanFrames. payload aliases the scanned buffer.
type frame struct {
	off     int64 // file offset of the frame header
	typ     byte
	flags   byte
	payload []byte
}

// damage is a byte range that held no valid frame.
type damage struct {
	off, len int64
}

// frameAt returns the length of the complete, valid frame at b[0:], or 0.
func frameAt(b []byte) int {
	s := scanner{b: b}
	return s.frameLen(0, maxFramePayload)
}

var syncBytes = []byte{0xE7, 'C', 'C', 'R'}

// scanFrames walks the frames in b, which holds the file bytes starting at
// file offset base, and calls fn for each valid frame in order.
//
// A damaged region (bad sync word, length or checksum) is skipped when a valid
// frame follows it, and reported through bad. What happens at the end of b
// depends on final: a writer may be appending right now, so when final is
// false an unfinished or unverifiable tail is left for a later scan; when
// final is true (the caller holds the file lock, so nobody is writing) the
// tail is declared damaged and consumed.
//
// scanFrames returns the number of bytes consumed: the offset after the last
// frame or damaged region it accounted for.
//
// The work is linear in len(b) whatever b holds (see scanner): a frame the
// scan has not yet seen is checked directly only when its claim is small or
// covered by the bytes of valid frames already read; any other claim, and
// every candidate while resynchronising, is checked through checkpoints.
func scanFrames(b []byte, base int64, final bool, fn func(frame), bad func(damage)) int64 {
	s := scanner{b: b}
	defer func() { crcWork.Add(s.work) }()
	// credit is how large a claim may be checked directly: a first
	// allowance (a frame at the start of a scan is most likely valid), plus
	// the valid bytes read, less what direct checks of failed claims cost.
	// Direct checks therefore waste at most initialCredit plus the valid
	// bytes of a scan.
	credit := initialCredit
	p := 0
	for p < len(b) {
		n := s.frameLen(p, uint32(max(credit, crcStride)))
		if n > 0 {
			fn(frame{off: base + int64(p), typ: b[p+4], flags: b[p+5], payload: b[p+frameHeader : p+n]})
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
			bad(damage{off: base + int64(p), len: int64(q - p)})
		}
		p = q
	}
	return int64(p)
}

// initialCredit is what direct checks may waste in one scan before any
// valid frame was read: more than a snapshot chunk, so that a file without
// damage is never checked through checkpoints.
const initialCredit = 2 << 20

// claimedPayload returns the payload length a plausible frame header at
// b[0:] claims, or 0.
func claimedPayload(b []byte) int {
	if len(b) < frameHeader || binary.LittleEndian.Uint32(b) != frameSync {
		return 0
	}
	return int(min(binary.LittleEndian.Uint32(b[8:]), maxFramePayload))
}
