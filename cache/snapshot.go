package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// snapshotChunkRaw is the uncompressed size at which a snapshot chunk is cut.
// Smaller chunks lose fewer entries to a damaged byte; larger ones compress
// a little better.
const snapshotChunkRaw = 128 << 10

// Bounds on what a snapshot may make a reader hold. Every count and length
// in a file is a hint, bounded by the bytes that carry it.
const (
	// maxRecordRaw is the most bytes one record takes in a decoded chunk:
	// four uvarints, a key and a value.
	maxRecordRaw = 4*binary.MaxVarintLen64 + MaxKeySize + MaxValueSize

	// maxChunkRaw bounds a chunk's decoded size. A writer cuts a chunk once
	// it holds snapshotChunkRaw bytes, so the last record may take it past
	// that by at most one record. A chunk that declares more, or expands to
	// more, is damage.
	maxChunkRaw = snapshotChunkRaw + maxRecordRaw

	// expandFactor bounds what one reading of a file may decode: the
	// decoded bytes of its chunks, each record counted as at least
	// minRecordCost bytes, are at most expandFactor times the file's size
	// (plus budgetSlack). A snapshot of cuDNN keys and results expands
	// about 7 to 12 times; writers pad a file that would expand more (see
	// contents.encode), so a file this package wrote is always read whole.
	// The reader's memory is then a small multiple of the file's size.
	expandFactor = 16

	// minRecordCost is what a record costs against the budget at least:
	// about what an index or a merged view holds per entry besides its
	// bytes. Without it, a file of tiny records could make millions of
	// entries out of a few kilobytes.
	minRecordCost = 128

	// budgetSlack lets a small file written before writers padded hold a
	// chunk of the largest size whatever it compresses to: one maximal
	// value, say.
	budgetSlack = maxChunkRaw
)

// decodeBudget is what is left to decode in one reading of a file. It
// starts at expandFactor times the file's size plus budgetSlack, and grows
// by expandFactor times what the file grows. Chunks that do not fit are
// damage, never decoded.
type decodeBudget struct{ left int64 }

func newDecodeBudget(fileBytes int64) decodeBudget {
	return decodeBudget{left: expandFactor*max(fileBytes, 0) + budgetSlack}
}

// grow adds the budget of n more file bytes.
func (b *decodeBudget) grow(n int64) { b.left += expandFactor * max(n, 0) }

// take spends n if that much is left.
func (b *decodeBudget) take(n int64) bool {
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

// recordExtra is what a record of raw decoded bytes costs beyond them.
func recordExtra(raw int) int64 { return int64(max(minRecordCost-raw, 0)) }

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

// decoder decodes one snapshot chunk at a time. Its output is bounded by
// the capacity of the destination, which decodeChunk sets to what the chunk
// may hold.
func decoder() *zstd.Decoder {
	zdecOnce.Do(func() {
		zdec, _ = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(maxChunkRaw),
			zstd.WithDecodeAllCapLimit(true),
			zstd.IgnoreChecksum(true))
	})
	return zdec
}

// appendSnapshotFrames appends snapshot frames holding recs, all of one
// scope, to dst. scratch is a buffer that is reused and returned. cost is
// what the chunks cost a reader's decodeBudget.
func appendSnapshotFrames(dst []byte, scopeHash uint64, scope string, recs []record, scratch []byte) (_, _ []byte, cost int64) {
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
			start := len(raw)
			raw = binary.AppendUvarint(raw, uint64(len(r.key)))
			raw = binary.AppendUvarint(raw, uint64(len(r.value)))
			raw = binary.AppendUvarint(raw, uint64(r.inserted-base))
			raw = binary.AppendUvarint(raw, uint64(r.used-r.inserted))
			raw = append(raw, r.key...)
			raw = append(raw, r.value...)
			cost += recordExtra(len(raw) - start)
			n++
		}
		cost += int64(len(raw))
		payload := make([]byte, 12, 12+len(raw)/2)
		binary.LittleEndian.PutUint64(payload, scopeHash)
		binary.LittleEndian.PutUint32(payload[8:], uint32(n))
		payload = encoder().EncodeAll(raw, payload)
		dst = appendFrame(dst, frameSnapshot, frameFlagZstd, payload)
		recs = recs[n:]
		scratch = raw
	}
	return dst, scratch, cost
}

// appendPadding appends pad frames to image until it is at least size
// bytes long.
func appendPadding(image []byte, size int64) []byte {
	var zeros []byte
	for int64(len(image)) < size {
		n := min(max(size-int64(len(image))-frameHeader, 0), maxFramePayload)
		if cap(zeros) < int(n) {
			zeros = make([]byte, n)
		}
		image = appendFrame(image, framePad, 0, zeros[:n])
	}
	return image
}

func decodeSnapshotHead(p []byte) (snapshotHead, bool) {
	if len(p) < 12 {
		return snapshotHead{}, false
	}
	return snapshotHead{binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint32(p[8:])}, true
}

var (
	errBadSnapshot = errors.New("malformed snapshot chunk")
	errOverBudget  = errors.New("snapshot chunk beyond the decode budget")
)

// chunkEntries bounds the entries a snapshot chunk of payload bytes that
// claims count entries may hold: a chunk that fits the decode budget holds
// at most expandFactor*payload/minRecordCost records. It is the size hint
// used before decoding (or without decoding: another scope's chunks).
func chunkEntries(count uint32, payload int) int64 {
	return min(int64(count), int64(payload)*expandFactor/minRecordCost)
}

// zstdFrame checks that body is exactly one zstd frame without a
// dictionary, and returns the content size it declares (-1: none), what
// its raw and RLE blocks alone decode to (exact), and an upper bound on
// what it can decode to. Walking the block headers costs one step per
// block. Anything after the frame (a second frame, a skippable frame)
// makes the chunk damage: writers never put it there, and the decoder
// would decode a second frame beyond what the first one declares.
func zstdFrame(body []byte) (fcs, exact, bound int64, ok bool) {
	var h zstd.Header
	if err := h.Decode(body); err != nil || h.Skippable || h.DictionaryID != 0 {
		return 0, 0, 0, false
	}
	const maxBlock = 128 << 10 // zstd's block maximum size
	p := h.HeaderSize
	for last := false; !last; {
		if len(body)-p < 3 {
			return 0, 0, 0, false
		}
		bh := int(body[p]) | int(body[p+1])<<8 | int(body[p+2])<<16
		p += 3
		last = bh&1 != 0
		size := bh >> 3
		switch bh >> 1 & 3 {
		case 0: // raw
			p += size
			exact += int64(size)
		case 1: // RLE: one byte repeated size times
			p++
			exact += int64(size)
		case 2: // compressed
			if size > maxBlock {
				return 0, 0, 0, false
			}
			p += size
			bound += maxBlock
		default:
			return 0, 0, 0, false
		}
		if p > len(body) {
			return 0, 0, 0, false
		}
	}
	if h.HasCheckSum {
		p += 4
	}
	if p != len(body) {
		return 0, 0, 0, false
	}
	fcs = -1
	if h.HasFCS {
		fcs = int64(min(h.FrameContentSize, 1<<62))
	}
	return fcs, exact, exact + bound, true
}

// decodeChunk returns a snapshot payload's body, decompressed if it is
// zstd, charging its size to b. The body may alias the payload or scratch
// unless keep is set; scratch is returned for reuse. A chunk that declares
// or decodes to more than maxChunkRaw is damage; one that does not fit in
// what is left of b is damage too, and is never decoded.
func decodeChunk(f frame, scratch []byte, keep bool, b *decodeBudget) (body, _ []byte, err error) {
	body = f.payload[12:]
	if f.flags&frameFlagZstd == 0 {
		if len(body) > maxChunkRaw {
			return nil, scratch, errBadSnapshot
		}
		if !b.take(int64(len(body))) {
			return nil, scratch, errOverBudget
		}
		return body, scratch, nil
	}
	// The decoder bounds what compressed blocks produce by the capacity of
	// its destination, but appends raw and RLE blocks whole and checks
	// after: so their sizes alone must fit, or a few bytes could make it
	// allocate a block's worth for nothing.
	fcs, exact, bound, ok := zstdFrame(body)
	if !ok || fcs > maxChunkRaw || (fcs >= 0 && (fcs > bound || fcs < exact)) {
		return nil, scratch, errBadSnapshot
	}
	// What a chunk may decode to is charged before decoding: its declared
	// size, or without one all it could take, the unused part refunded.
	limit := fcs
	if fcs < 0 {
		limit = min(bound, maxChunkRaw, b.left)
		if exact > limit {
			return nil, scratch, errOverBudget
		}
	}
	if !b.take(limit) {
		return nil, scratch, errOverBudget
	}
	var dst []byte
	if keep && fcs >= 0 {
		dst = make([]byte, 0, limit)
	} else {
		if int64(cap(scratch)) < limit {
			scratch = make([]byte, 0, limit)
		}
		dst = scratch[:0:limit]
	}
	out, err := decoder().DecodeAll(body, dst)
	if err != nil || (fcs >= 0 && int64(len(out)) != fcs) {
		return nil, scratch, errBadSnapshot
	}
	if fcs < 0 {
		b.left += limit - int64(len(out))
		if keep {
			out = bytes.Clone(out)
		}
	}
	return out, scratch, nil
}

// decodeSnapshot decodes a snapshot payload and appends its records to
// recs, charging b for the decoded bytes and for each record at least
// minRecordCost. Either the whole chunk decodes or nothing is appended. The
// records' slices alias scratch (returned for reuse), or with keep a buffer
// of their own.
func decodeSnapshot(f frame, scratch []byte, recs []record, keep bool, b *decodeBudget) (scope string, _ []record, _ []byte, err error) {
	head, ok := decodeSnapshotHead(f.payload)
	if !ok {
		return "", recs, scratch, errBadSnapshot
	}
	raw, scratch, err := decodeChunk(f, scratch, keep, b)
	if err != nil {
		return "", recs, scratch, err
	}
	start := len(recs)
	fail := func(err error) (string, []record, []byte, error) { return "", recs[:start], scratch, err }
	slen, n := binary.Uvarint(raw)
	if n <= 0 || slen > MaxScopeSize || uint64(len(raw)-n) < slen {
		return fail(errBadSnapshot)
	}
	scope = string(raw[n : n+int(slen)])
	raw = raw[n+int(slen):]
	base, n := binary.Varint(raw)
	if n <= 0 {
		return fail(errBadSnapshot)
	}
	raw = raw[n:]
	for i := uint32(0); i < head.count; i++ {
		var v [4]uint64
		used := 0
		for j := range v {
			x, n := binary.Uvarint(raw[used:])
			if n <= 0 {
				return fail(errBadSnapshot)
			}
			v[j] = x
			used += n
		}
		raw = raw[used:]
		klen, vlen := v[0], v[1]
		if klen == 0 || klen > MaxKeySize || vlen > MaxValueSize || uint64(len(raw)) < klen+vlen {
			return fail(errBadSnapshot)
		}
		if !b.take(recordExtra(used + int(klen+vlen))) {
			return fail(errOverBudget)
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
		return fail(errBadSnapshot)
	}
	return scope, recs, scratch, nil
}
