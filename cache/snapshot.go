package cache

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// snapshotChunkRaw is the uncompressed size at which a snapshot chunk is cut.
// Smaller chunks lose fewer entries to a damaged byte; larger ones compress
// a little better.
const snapshotChunkRaw = 128 << 10

// record is one entry with the times compaction and the tools need.
type record struct {
	key, value []byte
	inserted   int64 // unix ms of the insert that wrote this value
	used       int64 // unix ms of the last known use (>= inserted)
}

// snapshotHead is the uncompressed prefix of a snapshot payload.
type snapshotHead struct {
	scopeHash uint64
	count     uint32
}

var (
	zencOnce sync.Once
	zenc     *zstd.Encoder
	zdecOnce sync.Once
	zdec     *zstd.Decoder
)

func encoder() *zstd.Encoder {
	zencOnce.Do(func() {
		zenc, _ = zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderLevel(zstd.SpeedBetterCompression),
			zstd.WithEncoderCRC(false),   // the frame carries a CRC-32C
			zstd.WithWindowSize(256<<10), // a chunk is ~128 KiB raw: a larger window only costs memory
			zstd.WithLowerEncoderMem(true))
	})
	return zenc
}

func decoder() *zstd.Decoder {
	zdecOnce.Do(func() {
		zdec, _ = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(2*maxFramePayload),
			zstd.IgnoreChecksum(true))
	})
	return zdec
}

// appendSnapshotFrames appends snapshot frames holding recs, all of one
// scope, to dst. base is a scratch buffer that is reused and returned.
func appendSnapshotFrames(dst []byte, scopeHash uint64, scope string, recs []record, scratch []byte) ([]byte, []byte) {
	for len(recs) > 0 {
		raw := scratch[:0]
		raw = binary.AppendUvarint(raw, uint64(len(scope)))
		raw = append(raw, scope...)
		base := recs[0].inserted
		for _, r := range recs {
			base = min(base, r.inserted, r.used)
		}
		raw = binary.AppendVarint(raw, base)
		n := 0
		for n < len(recs) && (n == 0 || len(raw) < snapshotChunkRaw) {
			r := recs[n]
			raw = binary.AppendUvarint(raw, uint64(len(r.key)))
			raw = binary.AppendUvarint(raw, uint64(len(r.value)))
			raw = binary.AppendUvarint(raw, uint64(r.inserted-base))
			raw = binary.AppendUvarint(raw, uint64(r.used-r.inserted))
			raw = append(raw, r.key...)
			raw = append(raw, r.value...)
			n++
		}
		payload := make([]byte, 12, 12+len(raw)/2)
		binary.LittleEndian.PutUint64(payload, scopeHash)
		binary.LittleEndian.PutUint32(payload[8:], uint32(n))
		payload = encoder().EncodeAll(raw, payload)
		dst = appendFrame(dst, frameSnapshot, frameFlagZstd, payload)
		recs = recs[n:]
		scratch = raw
	}
	return dst, scratch
}

func decodeSnapshotHead(p []byte) (snapshotHead, bool) {
	if len(p) < 12 {
		return snapshotHead{}, false
	}
	return snapshotHead{binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint32(p[8:])}, true
}

var errBadSnapshot = errors.New("malformed snapshot chunk")

// decodeSnapshot decompresses a snapshot payload into scratch and appends
// its records to recs. Either the whole chunk decodes or nothing is
// appended. The records' slices alias scratch, which is returned for reuse.
func decodeSnapshot(f frame, scratch []byte, recs []record) (scope string, _ []record, _ []byte, err error) {
	head, ok := decodeSnapshotHead(f.payload)
	if !ok {
		return "", recs, scratch, errBadSnapshot
	}
	raw := f.payload[12:]
	if f.flags&frameFlagZstd != 0 {
		raw, err = decoder().DecodeAll(raw, scratch[:0])
		if err != nil {
			return "", recs, scratch, errBadSnapshot
		}
		scratch = raw
	}
	start := len(recs)
	fail := func() (string, []record, []byte, error) { return "", recs[:start], scratch, errBadSnapshot }
	slen, n := binary.Uvarint(raw)
	if n <= 0 || slen > MaxScopeSize || uint64(len(raw)-n) < slen {
		return fail()
	}
	scope = string(raw[n : n+int(slen)])
	raw = raw[n+int(slen):]
	base, n := binary.Varint(raw)
	if n <= 0 {
		return fail()
	}
	raw = raw[n:]
	for i := uint32(0); i < head.count; i++ {
		var v [4]uint64
		for j := range v {
			x, n := binary.Uvarint(raw)
			if n <= 0 {
				return fail()
			}
			v[j] = x
			raw = raw[n:]
		}
		klen, vlen := v[0], v[1]
		if klen == 0 || klen > MaxKeySize || vlen > MaxValueSize || uint64(len(raw)) < klen+vlen {
			return fail()
		}
		ins := base + int64(v[2])
		recs = append(recs, record{
			key:      raw[:klen:klen],
			value:    raw[klen : klen+vlen : klen+vlen],
			inserted: ins,
			used:     ins + int64(v[3]),
		})
		raw = raw[klen+vlen:]
	}
	if len(raw) != 0 {
		return fail()
	}
	return scope, recs, scratch, nil
}
