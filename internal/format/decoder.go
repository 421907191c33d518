package format

import "encoding/binary"

// A Visitor receives what a file's frames say, as Decoder.Frame decodes
// them. Decoder.Frame is the one place where a frame's type is interpreted:
// the engine's index and the merged contents of the offline tools and of
// compaction are both Visitors.
type Visitor interface {
	// Put is one entry: a put frame, or one entry of a snapshot chunk. A
	// put's Used is its Inserted. r's bytes stay valid after the call only
	// if the Decoder keeps chunks.
	Put(scope uint64, r Record)
	// Scope names a scope: a scope frame, or the name a snapshot chunk
	// carries. Only names whose hash is the hash they claim are passed on,
	// so two of them for one hash are a real collision.
	Scope(hash uint64, name string)
	// Touch records that the key with hash keyHash was used at t.
	Touch(scope uint64, t int64, keyHash uint64)
	// Chunk is told of every snapshot chunk's scope and says whether to
	// decode it; a chunk not decoded costs nothing.
	Chunk(scope uint64) bool
	// Damaged is a valid frame whose payload does not decode, or a chunk
	// that would exceed the decode budget: the whole frame is reported.
	Damaged(d Damage)
}

// Decoder decodes the frames of one reading of a file, within Budget.
type Decoder struct {
	Budget *Budget
	// Keep keeps each decoded chunk's bytes, so that the records passed to
	// Put stay valid (Contents holds them); otherwise one buffer is reused,
	// and the visitor copies what it keeps (the engine's index does).
	Keep bool

	zbuf []byte   // decompression scratch
	recs []Record // one chunk's records
}

// Frame decodes f and tells v what it says. Types it does not know are
// skipped, as the format requires.
func (d *Decoder) Frame(f Frame, v Visitor) {
	damaged := func() { v.Damaged(Damage{Off: f.Off, Len: f.End() - f.Off}) }
	switch f.Type {
	case TypePut:
		p, ok := DecodePut(f.Payload)
		if !ok {
			damaged()
			return
		}
		v.Put(p.Scope, Record{Key: p.Key, Value: p.Value, Inserted: p.Time, Used: p.Time})
	case TypeScope:
		if h, name, ok := DecodeScope(f.Payload); ok && ScopeHash(name) == h {
			v.Scope(h, name)
		}
	case TypeTouch:
		if len(f.Payload) < 16 {
			damaged()
			return
		}
		scope := binary.LittleEndian.Uint64(f.Payload)
		t := int64(binary.LittleEndian.Uint64(f.Payload[8:]))
		for p := f.Payload[16:]; len(p) >= 8; p = p[8:] {
			v.Touch(scope, t, binary.LittleEndian.Uint64(p))
		}
	case TypeSnapshot:
		head, ok := DecodeSnapshotHead(f.Payload)
		if !ok {
			damaged()
			return
		}
		if !v.Chunk(head.Scope) {
			return
		}
		var name string
		var err error
		name, d.recs, d.zbuf, err = DecodeSnapshot(f, d.zbuf, d.recs[:0], d.Keep, d.Budget)
		if err != nil {
			damaged()
			return
		}
		if name != "" && ScopeHash(name) == head.Scope {
			v.Scope(head.Scope, name)
		}
		for _, r := range d.recs {
			v.Put(head.Scope, r)
		}
		clear(d.recs)
	}
}

// Release drops the decoder's scratch buffers if they grew past max bytes.
func (d *Decoder) Release(max int) {
	if cap(d.zbuf) > max {
		d.zbuf = nil
	}
	d.recs = nil
}
