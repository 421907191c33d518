package format

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"time"

	"github.com/convcache/convcache/internal/errs"
)

// The file header. The layout is drawn in package cache (cache/doc.go).
const (
	// Version is the newest file format this package reads and the one
	// it writes.
	Version = 1

	HeaderSize = 32
)

var fileMagic = [8]byte{0x89, 'C', 'C', 'D', 'B', '\r', '\n', 0x1a}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header flags.
const (
	// HeaderCompacted marks a file written by compaction (or a tool that
	// writes a compacted file), as opposed to one created empty by a
	// writer: its created time is then the last compaction. Files written
	// before the flag existed have no flags; a snapshot right after the
	// header tells the same there.
	HeaderCompacted = 1
)

// Header is the decoded file header.
type Header struct {
	Version uint32
	Created time.Time // when this file generation was written
	Flags   uint32
}

// EncodeHeader returns a header for a file written at created, with flags.
func EncodeHeader(created time.Time, flags uint32) []byte {
	b := make([]byte, HeaderSize)
	copy(b, fileMagic[:])
	binary.LittleEndian.PutUint32(b[8:], Version)
	binary.LittleEndian.PutUint32(b[12:], HeaderSize)
	binary.LittleEndian.PutUint64(b[16:], uint64(created.UnixNano()))
	binary.LittleEndian.PutUint32(b[24:], flags)
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	return b
}

// DecodeHeader validates a header in a fixed order: size, magic, version,
// checksum. Each failure has its own error, so a foreign file, a newer format
// and a damaged header are told apart.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) == 0 {
		return Header{}, ErrEmpty
	}
	if len(b) < HeaderSize {
		if bytes.HasPrefix(fileMagic[:], b) || bytes.HasPrefix(b, fileMagic[:]) {
			return Header{}, errTruncatedHeader
		}
		return Header{}, ErrForeign
	}
	if !bytes.Equal(b[:8], fileMagic[:]) {
		if damagedHeader(b) {
			return Header{}, errHeaderDamaged
		}
		return Header{}, ErrForeign
	}
	v := binary.LittleEndian.Uint32(b[8:])
	if v > Version {
		if damagedHeader(b) {
			return Header{}, errHeaderDamaged
		}
		return Header{Version: v}, ErrNewer
	}
	if v == 0 || binary.LittleEndian.Uint32(b[12:]) != HeaderSize ||
		binary.LittleEndian.Uint32(b[28:]) != crc32.Checksum(b[:28], castagnoli) {
		return Header{}, errHeaderChecksum
	}
	return Header{
		Version: v,
		Created: time.Unix(0, int64(binary.LittleEndian.Uint64(b[16:]))),
		Flags:   binary.LittleEndian.Uint32(b[24:]),
	}, nil
}

// damagedHeader reports whether b, a header whose magic number or version
// is not this version's, is this version's header with those bytes
// damaged: with them restored, its checksum matches. A flipped bit there is
// then reported as damage, not as a foreign file or a newer version.
func damagedHeader(b []byte) bool {
	var h [HeaderSize]byte
	copy(h[:], b)
	copy(h[:], fileMagic[:])
	binary.LittleEndian.PutUint32(h[8:], Version)
	return binary.LittleEndian.Uint32(h[12:]) == HeaderSize &&
		binary.LittleEndian.Uint32(h[28:]) == crc32.Checksum(h[:28], castagnoli)
}

// Why a header is refused, each wrapping ErrFormat (not a convcache file
// this library reads: left alone) or ErrCorrupt (a damaged header).
var (
	ErrEmpty           = errs.Detail(errs.ErrFormat, "file is empty")
	ErrForeign         = errs.Detail(errs.ErrFormat, "unknown magic number (not a convcache file)")
	ErrNewer           = errs.Detail(errs.ErrFormat, "format version is newer than this library")
	errTruncatedHeader = errs.Detail(errs.ErrCorrupt, "file header is truncated")
	errHeaderChecksum  = errs.Detail(errs.ErrCorrupt, "file header checksum mismatch")
	errHeaderDamaged   = errs.Detail(errs.ErrCorrupt, "file header damaged (its magic number or version differs from what its checksum covers)")
)
