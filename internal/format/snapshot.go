package format

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

// Record is one entry with the times compaction and the tools need.
type Record struct {
	Key, Value []byte
	Inserted   int64 // unix ms of the insert that wrote this value
	Used       int64 // unix ms of the last known use (>= inserted)
}

// SnapshotHead is the uncompressed prefix of a snapshot payload.
type SnapshotHead struct {
	Scope uint64
	Count uint32
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

// AppendSnapshotFrames appends snapshot frames holding recs, all of one
// scope, to dst. scratch is a buffer that is reused and returned. cost is
// what the chunks cost a reader's Budget.
func AppendSnapshotFrames(dst []byte, scopeHash uint64, scope string, recs []Record, scratch []byte) (_, _ []byte, cost int64) {
	return appendSnapshotChunks(dst, scopeHash, scope, recs, scratch, nil)
}

// appendSnapshotChunks is AppendSnapshotFrames, and appends to list (if not
// nil) each chunk as a snapshot index describes it. A chunk's Off is its
// offset in dst, and its First aliases recs.
func appendSnapshotChunks(dst []byte, scopeHash uint64, scope string, recs []Record, scratch []byte, list *[]IndexedChunk) (_, _ []byte, cost int64) {
	for len(recs) > 0 {
		raw := scratch[:0]
		raw = binary.AppendUvarint(raw, uint64(len(scope)))
		raw = append(raw, scope...)
		base := recs[0].Inserted
		for _, r := range recs {
			base = min(base, r.Inserted, r.Used)
		}
		raw = binary.AppendVarint(raw, base)
		n := 0
		for n < len(recs) && (n == 0 || len(raw) < snapshotChunkRaw) {
			r := recs[n]
			start := len(raw)
			raw = binary.AppendUvarint(raw, uint64(len(r.Key)))
			raw = binary.AppendUvarint(raw, uint64(len(r.Value)))
			raw = binary.AppendUvarint(raw, uint64(r.Inserted-base))
			raw = binary.AppendUvarint(raw, uint64(r.Used-r.Inserted))
			raw = append(raw, r.Key...)
			raw = append(raw, r.Value...)
			cost += recordExtra(len(raw) - start)
			n++
		}
		cost += int64(len(raw))
		payload := make([]byte, 12, 12+len(raw)/2)
		binary.LittleEndian.PutUint64(payload, scopeHash)
		binary.LittleEndian.PutUint32(payload[8:], uint32(n))
		payload = encoder().EncodeAll(raw, payload)
		if list != nil {
			*list = append(*list, IndexedChunk{Scope: scopeHash, Off: int64(len(dst)),
				Len: int64(FrameHeaderSize + len(payload)), Count: uint32(n), First: recs[0].Key})
		}
		dst = AppendFrame(dst, TypeSnapshot, FrameZstd, payload)
		recs = recs[n:]
		scratch = raw
	}
	return dst, scratch, cost
}

// AppendPadding appends pad frames to image until it is at least size
// bytes long.
func AppendPadding(image []byte, size int64) []byte {
	var zeros []byte
	for int64(len(image)) < size {
		n := min(max(size-int64(len(image))-FrameHeaderSize, 0), MaxFramePayload)
		if cap(zeros) < int(n) {
			zeros = make([]byte, n)
		}
		image = AppendFrame(image, TypePad, 0, zeros[:n])
	}
	return image
}

func DecodeSnapshotHead(p []byte) (SnapshotHead, bool) {
	if len(p) < 12 {
		return SnapshotHead{}, false
	}
	return SnapshotHead{binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint32(p[8:])}, true
}

var (
	errBadSnapshot = errors.New("malformed snapshot chunk")
	errOverBudget  = errors.New("snapshot chunk beyond the decode budget")
)

// ChunkEntries bounds the entries a snapshot chunk of payload bytes that
// claims count entries may hold: a chunk that fits the decode budget holds
// at most ExpandFactor*payload/MinRecordCost records. It is the size hint
// used before decoding (or without decoding: another scope's chunks).
func ChunkEntries(count uint32, payload int) int64 {
	return min(int64(count), int64(payload)*ExpandFactor/MinRecordCost)
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
func decodeChunk(f Frame, scratch []byte, keep bool, b *Budget) (body, _ []byte, err error) {
	body = f.Payload[12:]
	if f.Flags&FrameZstd == 0 {
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
	// The shared decoder keeps a reference to its last input: given a
	// slice of a whole file image, it would keep the image alive after the
	// load is done (2.2 MB at 100k entries). It gets a copy of the chunk.
	out, err := decoder().DecodeAll(bytes.Clone(body), dst)
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

// DecodeSnapshot decodes a snapshot payload and appends its records to
// recs, charging b for the decoded bytes and for each record at least
// MinRecordCost. Either the whole chunk decodes or nothing is appended. The
// records' slices alias scratch (returned for reuse), or with keep a buffer
// of their own.
func DecodeSnapshot(f Frame, scratch []byte, recs []Record, keep bool, b *Budget) (scope string, _ []Record, _ []byte, err error) {
	head, ok := DecodeSnapshotHead(f.Payload)
	if !ok {
		return "", recs, scratch, errBadSnapshot
	}
	raw, scratch, err := decodeChunk(f, scratch, keep, b)
	if err != nil {
		return "", recs, scratch, err
	}
	start := len(recs)
	fail := func(err error) (string, []Record, []byte, error) { return "", recs[:start], scratch, err }
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
	for i := uint32(0); i < head.Count; i++ {
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
		recs = append(recs, Record{
			Key:      raw[:klen:klen],
			Value:    raw[klen : klen+vlen : klen+vlen],
			Inserted: ins,
			Used:     ins + int64(v[3]),
		})
		raw = raw[klen+vlen:]
	}
	if len(raw) != 0 {
		return fail(errBadSnapshot)
	}
	return scope, recs, scratch, nil
}
