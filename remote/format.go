package remote

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/cespare/xxhash/v2"
)

// The record stored as a Redis string value (see the package doc).
const (
	recordMagic   = "CCRV"
	recordVersion = 1
	headerSize    = 24
	trailerSize   = 4 // CRC-32C
	// flagMAC: a tag (HMAC-SHA256 under the cluster's key) follows the
	// value. Readers before it reject any non-zero flags.
	flagMAC = 0x01
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Reasons a stored value is rejected. Each is counted in Stats.Rejected and
// the value is treated as a miss.
var (
	errShort    = errors.New("remote record: shorter than its header")
	errMagic    = errors.New("remote record: bad magic (not written by convcache)")
	errVersion  = errors.New("remote record: newer format version or unknown flags")
	errLength   = errors.New("remote record: lengths do not add up")
	errChecksum = errors.New("remote record: checksum mismatch")
	errScope    = errors.New("remote record: written for another scope")
	errKey      = errors.New("remote record: written for another key")
	errTooLarge = errors.New("remote record: value above the size limit")
	errUnsigned = errors.New("remote record: no MAC, and this tier has a key")
	errMAC      = errors.New("remote record: MAC mismatch (another key, or forged)")
)

// appendRecord appends the record for (scope, key, value) written at
// unixMs to dst. With a key (mk non-nil) the record carries a MAC.
func appendRecord(dst []byte, scope string, key, value []byte, unixMs int64, mk *macKey) []byte {
	start := len(dst)
	var h [headerSize]byte
	copy(h[0:4], recordMagic)
	h[4] = recordVersion
	if mk != nil {
		h[5] = flagMAC
	}
	binary.LittleEndian.PutUint16(h[6:], uint16(len(scope)))
	binary.LittleEndian.PutUint16(h[8:], uint16(len(key)))
	binary.LittleEndian.PutUint16(h[10:], 0)
	binary.LittleEndian.PutUint32(h[12:], uint32(len(value)))
	binary.LittleEndian.PutUint64(h[16:], uint64(unixMs))
	dst = append(dst, h[:]...)
	dst = append(dst, scope...)
	dst = append(dst, key...)
	dst = append(dst, value...)
	if mk != nil {
		dst = mk.appendTag(dst, dst[start:])
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// recordSize is the stored size of a record, with a MAC if withMAC.
func recordSize(scope string, key, value []byte, withMAC bool) int {
	n := headerSize + len(scope) + len(key) + len(value) + trailerSize
	if withMAC {
		n += tagSize
	}
	return n
}

// parseRecord checks rec, in a fixed order (size, magic, version and
// flags, lengths, checksum, scope, key, value limit, MAC), and returns its
// value, a sub-slice of rec. With a key (mk non-nil) a record must carry a
// valid MAC under it, and authenticated is true. Without one, a record with
// or without a MAC is accepted unauthenticated: its tag cannot be checked.
func parseRecord(rec []byte, scope string, key []byte, maxValue int, mk *macKey) (value []byte, authenticated bool, err error) {
	if len(rec) < headerSize+trailerSize {
		return nil, false, errShort
	}
	if string(rec[0:4]) != recordMagic {
		return nil, false, errMagic
	}
	flags := rec[5]
	if rec[4] != recordVersion || flags&^flagMAC != 0 || rec[10] != 0 || rec[11] != 0 {
		return nil, false, errVersion // a newer version, or flags this one does not know
	}
	tag := 0
	if flags&flagMAC != 0 {
		tag = tagSize
	}
	sl := int(binary.LittleEndian.Uint16(rec[6:]))
	kl := int(binary.LittleEndian.Uint16(rec[8:]))
	vl := int64(binary.LittleEndian.Uint32(rec[12:]))
	if int64(headerSize+sl+kl+tag+trailerSize)+vl != int64(len(rec)) {
		return nil, false, errLength
	}
	body := len(rec) - trailerSize
	if crc32.Checksum(rec[:body], castagnoli) != binary.LittleEndian.Uint32(rec[body:]) {
		return nil, false, errChecksum
	}
	p := rec[headerSize : body-tag]
	if string(p[:sl]) != scope {
		return nil, false, errScope
	}
	if !bytes.Equal(p[sl:sl+kl], key) {
		return nil, false, errKey
	}
	if vl > int64(maxValue) {
		return nil, false, errTooLarge
	}
	if mk == nil {
		return p[sl+kl:], false, nil
	}
	if tag == 0 {
		return nil, false, errUnsigned
	}
	if !mk.verify(rec[:body-tag], rec[body-tag:body]) {
		return nil, false, errMAC
	}
	return p[sl+kl:], true, nil
}

// entryKey is the Redis key of (scope, key): prefix:v1:<scope hash>:<key
// hash>, the hashes XXH64 in 16 lowercase hex digits.
func entryKey(prefix, scope string, key []byte) string {
	b := make([]byte, 0, len(prefix)+4+2*17)
	b = append(b, prefix...)
	b = append(b, ":v1:"...)
	b = appendHash(b, xxhash.Sum64String(scope))
	b = append(b, ':')
	b = appendHash(b, xxhash.Sum64(key))
	return string(b)
}

// lockKey is the Redis key of (scope, key)'s cluster build lock.
func lockKey(prefix, scope string, key []byte) string {
	return entryKey(prefix, scope, key) + ":lock"
}

func appendHash(b []byte, h uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, digits[(h>>uint(shift))&0xf])
	}
	return b
}
