package hostile

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
)

// The format, as cache/doc.go documents it.
const (
	HeaderSize  = 32
	FrameHeader = 16

	TypePut      = 1
	TypeScope    = 2
	TypeTouch    = 3
	TypeSnapshot = 4

	FlagZstd = 1

	// Limits the documentation gives.
	MaxKey     = 4 << 10
	MaxValue   = 1 << 20
	MaxScope   = 4 << 10
	MaxPayload = 64 << 20
	ChunkRaw   = 128 << 10 // where writers cut a snapshot chunk
)

var (
	magic      = []byte{0x89, 'C', 'C', 'D', 'B', '\r', '\n', 0x1a}
	syncWord   = []byte{0xE7, 'C', 'C', 'R'}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// Header returns a valid file header.
func Header() []byte {
	b := make([]byte, HeaderSize)
	copy(b, magic)
	binary.LittleEndian.PutUint32(b[8:], 1)
	binary.LittleEndian.PutUint32(b[12:], HeaderSize)
	binary.LittleEndian.PutUint64(b[16:], 1700000000e9)
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	return b
}

// Frame appends a frame with a correct checksum.
func Frame(dst []byte, typ, flags byte, payload []byte) []byte {
	return FrameClaiming(dst, typ, flags, uint32(len(payload)), payload)
}

// FrameClaiming appends a frame header claiming a payload of plen bytes,
// with the checksum those plen bytes would need if they were payload, then
// payload (which may be shorter than plen: the claim then runs into what
// follows).
func FrameClaiming(dst []byte, typ, flags byte, plen uint32, payload []byte) []byte {
	var h [FrameHeader]byte
	copy(h[:], syncWord)
	h[4], h[5] = typ, flags
	binary.LittleEndian.PutUint32(h[8:], plen)
	crc := crc32.Update(0, castagnoli, h[4:12])
	crc = crc32.Update(crc, castagnoli, payload[:min(len(payload), int(plen))])
	binary.LittleEndian.PutUint32(h[12:], crc)
	return append(append(dst, h[:]...), payload...)
}

// ScopeHash is the hash that names a scope in a file.
func ScopeHash(scope string) uint64 { return xxhash.Sum64String(scope) }

// Put appends a put frame.
func Put(dst []byte, scope uint64, key, value []byte) []byte {
	p := binary.LittleEndian.AppendUint64(nil, scope)
	p = binary.LittleEndian.AppendUint64(p, 1700000000000)
	p = binary.AppendUvarint(p, uint64(len(key)))
	p = append(append(p, key...), value...)
	return Frame(dst, TypePut, 0, p)
}

// Scope appends a scope frame naming hash.
func Scope(dst []byte, hash uint64, name string) []byte {
	p := binary.LittleEndian.AppendUint64(nil, hash)
	return Frame(dst, TypeScope, 0, append(p, name...))
}

// Touch appends a touch frame listing key hashes.
func Touch(dst []byte, scope uint64, hashes []uint64) []byte {
	p := binary.LittleEndian.AppendUint64(nil, scope)
	p = binary.LittleEndian.AppendUint64(p, 1700000000000)
	for _, h := range hashes {
		p = binary.LittleEndian.AppendUint64(p, h)
	}
	return Frame(dst, TypeTouch, 0, p)
}

// Snapshot appends a snapshot frame of scope claiming count entries, with
// body as it is (compressed or not, as flags say).
func Snapshot(dst []byte, scope uint64, count uint32, flags byte, body []byte) []byte {
	p := binary.LittleEndian.AppendUint64(nil, scope)
	p = binary.LittleEndian.AppendUint32(p, count)
	return Frame(dst, TypeSnapshot, flags, append(p, body...))
}

// Rec is one snapshot record.
type Rec struct{ Key, Value []byte }

// ChunkHead is the start of a decoded chunk: the scope name and a base time.
func ChunkHead(scope string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(scope)))
	return binary.AppendVarint(append(b, scope...), 1700000000000)
}

// RecHead is a record's four uvarints: key and value lengths, zero times.
func RecHead(klen, vlen int) []byte {
	b := binary.AppendUvarint(nil, uint64(klen))
	b = binary.AppendUvarint(b, uint64(vlen))
	return append(b, 0, 0)
}

// Chunk is a decoded chunk holding recs.
func Chunk(scope string, recs []Rec) []byte {
	b := ChunkHead(scope)
	for _, r := range recs {
		b = append(append(append(b, RecHead(len(r.Key), len(r.Value))...), r.Key...), r.Value...)
	}
	return b
}

var enc, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))

// Compress returns raw as one zstd frame, as a writer compresses a chunk.
func Compress(raw []byte) []byte { return enc.EncodeAll(raw, nil) }

// Zstd builds a zstd frame block by block, so that a few bytes can declare
// or produce any size. Parts are literal bytes (raw blocks) or runs of one
// byte (RLE blocks, four bytes each for up to 128 KiB).
type Zstd struct {
	FCS      int64 // declared content size; -1 declares none
	Checksum bool  // set the content-checksum flag (4 zero bytes follow)
	Window   byte  // window descriptor when FCS < 0 (0 = 128 KiB)
	DictID   uint32
	blocks   []byte
	size     int64
}

const maxBlock = 128 << 10

// Raw appends literal bytes.
func (z *Zstd) Raw(b []byte) *Zstd {
	for len(b) > 0 {
		n := min(len(b), maxBlock)
		z.blocks = appendBlockHeader(z.blocks, 0, n)
		z.blocks = append(z.blocks, b[:n]...)
		b = b[n:]
		z.size += int64(n)
	}
	return z
}

// Run appends n copies of c.
func (z *Zstd) Run(c byte, n int64) *Zstd {
	for n > 0 {
		k := min(n, maxBlock)
		z.blocks = appendBlockHeader(z.blocks, 1, int(k))
		z.blocks = append(z.blocks, c)
		n -= k
		z.size += k
	}
	return z
}

// Size is what the blocks decode to.
func (z *Zstd) Size() int64 { return z.size }

func appendBlockHeader(b []byte, typ, size int) []byte {
	h := typ<<1 | size<<3
	return append(b, byte(h), byte(h>>8), byte(h>>16))
}

// Bytes returns the frame: magic, header, blocks (the last one marked), and
// the checksum field if asked for.
func (z *Zstd) Bytes() []byte {
	b := []byte{0x28, 0xB5, 0x2F, 0xFD}
	var fhd byte
	if z.Checksum {
		fhd |= 1 << 2
	}
	if z.DictID != 0 {
		fhd |= 3
	}
	if z.FCS >= 0 {
		fhd |= 3<<6 | 1<<5 // 8-byte content size, single segment
	}
	b = append(b, fhd)
	if z.FCS < 0 {
		w := z.Window
		if w == 0 {
			w = 7 << 3 // 2^17
		}
		b = append(b, w)
	}
	if z.DictID != 0 {
		b = binary.LittleEndian.AppendUint32(b, z.DictID)
	}
	if z.FCS >= 0 {
		b = binary.LittleEndian.AppendUint64(b, uint64(z.FCS))
	}
	blocks := z.blocks
	if len(blocks) == 0 {
		blocks = appendBlockHeader(nil, 0, 0)
	}
	// Mark the last block: find it by walking the headers.
	last := 0
	for p := 0; p < len(blocks); {
		last = p
		h := int(blocks[p]) | int(blocks[p+1])<<8 | int(blocks[p+2])<<16
		if h>>1&3 == 1 {
			p += 4
		} else {
			p += 3 + h>>3
		}
	}
	out := append(b, blocks...)
	out[len(b)+last] |= 1
	if z.Checksum {
		out = append(out, 0, 0, 0, 0)
	}
	return out
}
