package format

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/cespare/xxhash/v2"
)

// Limits on what a file holds: a record beyond them is damage. Package
// cache exports them as the limits of what a cache stores.
const (
	MaxKeySize   = 4 << 10 // bytes in a key
	MaxValueSize = 1 << 20 // bytes in a value
	MaxScopeSize = 4 << 10 // bytes in a scope name
)

// ScopeHash returns the hash that identifies a scope name in a file: XXH64,
// seed 0.
func ScopeHash(name string) uint64 { return xxhash.Sum64String(name) }

// AppendPutFrame appends a put frame without building the payload separately.
func AppendPutFrame(dst []byte, scopeHash uint64, t int64, key, value []byte) []byte {
	start := len(dst)
	var h [FrameHeaderSize]byte
	dst = append(dst, h[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, scopeHash)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(t))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = append(dst, value...)
	fh := dst[start : start+FrameHeaderSize]
	binary.LittleEndian.PutUint32(fh[0:], frameSync)
	fh[4] = TypePut
	fh[5] = 0
	binary.LittleEndian.PutUint32(fh[8:], uint32(len(dst)-start-FrameHeaderSize))
	crc := crc32.Update(0, castagnoli, fh[4:12])
	crc = crc32.Update(crc, castagnoli, dst[start+FrameHeaderSize:])
	binary.LittleEndian.PutUint32(fh[12:], crc)
	return dst
}

// Put is a decoded put frame. Its slices alias the frame.
type Put struct {
	Scope uint64
	Time  int64 // unix milliseconds
	Key   []byte
	Value []byte
}

func DecodePut(p []byte) (Put, bool) {
	if len(p) < 17 {
		return Put{}, false
	}
	klen, n := binary.Uvarint(p[16:])
	if n <= 0 || klen == 0 || klen > MaxKeySize {
		return Put{}, false
	}
	rest := p[16+n:]
	if uint64(len(rest)) < klen || uint64(len(rest))-klen > MaxValueSize {
		return Put{}, false
	}
	return Put{
		Scope: binary.LittleEndian.Uint64(p),
		Time:  int64(binary.LittleEndian.Uint64(p[8:])),
		Key:   rest[:klen],
		Value: rest[klen:],
	}, true
}

func AppendScopeFrame(dst []byte, hash uint64, scope string) []byte {
	p := make([]byte, 8, 8+len(scope))
	binary.LittleEndian.PutUint64(p, hash)
	p = append(p, scope...)
	return AppendFrame(dst, TypeScope, 0, p)
}

func DecodeScope(p []byte) (uint64, string, bool) {
	if len(p) < 8 || len(p)-8 > MaxScopeSize {
		return 0, "", false
	}
	return binary.LittleEndian.Uint64(p), string(p[8:]), true
}
