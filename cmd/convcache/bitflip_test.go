package main

import (
	"bytes"
	le "encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
	"github.com/convcache/convcache/internal/format"
)

// The bit-flip property (issue 22): one bit flipped anywhere in a file
//
//   - is reported by verify (exit 1), so no bit rot is ever "ok";
//   - never makes a find return a value that was not written for its key:
//     a find returns the newest value whose record the flip spared, or
//     misses if it spared none;
//   - so loses at most the record or snapshot chunk that holds the flipped
//     byte: every entry of every other record is still found;
//   - and a read-write handle never truncates the file.
//
// It is checked at every offset of a small file laid out as compaction
// lays one out (index, chunks of two scopes, padding) with chunks of 8
// entries instead of about a thousand, plus a journal; and at 300 seeded
// offsets of a file that compaction wrote: 700 entries of about 600 bytes
// in two scopes, four chunks (a few hundred entries each, as compaction
// cuts them), no journal.

// version is one value a file holds for a key, and the frame that holds it.
type version struct {
	value    []byte
	off, end int64
}

type flipKey struct {
	scope uint64
	key   string
}

// flipModel is what a file holds: every version of every key, in file
// order, and the scopes' names.
type flipModel struct {
	versions map[flipKey][]version
	keys     map[uint64][]string // per scope, sorted
	names    map[uint64]string
	chunks   []int // entries per snapshot chunk
}

// modelOf decodes an undamaged image frame by frame.
func modelOf(t *testing.T, img []byte) *flipModel {
	t.Helper()
	m := &flipModel{versions: map[flipKey][]version{}, keys: map[uint64][]string{}, names: map[uint64]string{}}
	budget := format.NewBudget(int64(len(img)))
	dec := format.Decoder{Budget: &budget, Keep: true}
	v := &modelVisitor{m: m}
	format.Scan(img[format.HeaderSize:], format.HeaderSize, true, func(f format.Frame) {
		v.f, v.n = f, 0
		dec.Frame(f, v)
		if f.Type == format.TypeSnapshot {
			m.chunks = append(m.chunks, v.n)
		}
	}, func(d format.Damage) { t.Fatalf("the undamaged image has damage: %+v", d) })
	for k := range m.versions {
		m.keys[k.scope] = append(m.keys[k.scope], k.key)
	}
	for _, ks := range m.keys {
		slices.Sort(ks)
	}
	return m
}

type modelVisitor struct {
	m *flipModel
	f format.Frame
	n int
}

func (v *modelVisitor) Put(scope uint64, r format.Record) {
	k := flipKey{scope, string(r.Key)}
	v.m.versions[k] = append(v.m.versions[k], version{bytes.Clone(r.Value), v.f.Off, v.f.End()})
	v.n++
}
func (v *modelVisitor) Scope(h uint64, name string) { v.m.names[h] = name }
func (v *modelVisitor) Touch(uint64, int64, uint64) {}
func (v *modelVisitor) Chunk(uint64) bool           { return true }
func (v *modelVisitor) Damaged(d format.Damage)     {}

// latest is the value a find returns in the undamaged file.
func (m *flipModel) latest(k flipKey) []byte {
	vs := m.versions[k]
	return vs[len(vs)-1].value
}

func (m *flipModel) entries() int { return len(m.versions) }

// spared returns the value a find must return after a flip at off: the
// newest version whose frame does not hold off (nil: a miss).
func (m *flipModel) spared(k flipKey, off int64) []byte {
	vs := m.versions[k]
	for i := len(vs) - 1; i >= 0; i-- {
		if off < vs[i].off || off >= vs[i].end {
			return vs[i].value
		}
	}
	return nil
}

// held returns how many entries the frame that holds file offset off
// holds.
func (m *flipModel) held(off int64) int {
	n := 0
	for _, vs := range m.versions {
		for _, v := range vs {
			if off >= v.off && off < v.end {
				n++
				break
			}
		}
	}
	return n
}

// flipFigures are what a run of flips measured.
type flipFigures struct {
	tried   int // flips checked
	lostAny int // flips that lost at least one entry
	maxLost int // the most entries one flip lost
}

// checkFlip flips bit of byte off of img, writes it to path and checks the
// property. It returns how many entries the flip lost (a miss, or an older
// value than the file's newest).
func checkFlip(t *testing.T, path string, img []byte, m *flipModel, off, bit int) int {
	t.Helper()
	d := bytes.Clone(img)
	d[off] ^= 1 << bit
	where := fmt.Sprintf("bit %d of byte %d (of %d)", bit, off, len(d))

	// verify, as convcache verify runs it.
	f, err := cachefile.DecodeFile(path, d)
	switch {
	case err != nil && !errors.Is(err, cache.ErrCorrupt):
		t.Fatalf("%s: verify: %v, not a damaged header", where, err)
	case err == nil:
		r := verifyReport{Path: path}
		checkFile(&r, f, false)
		if len(r.Problems) == 0 {
			t.Fatalf("%s: verify says ok (torn tail %+v, warnings %q)", where, r.TornTail, r.Warnings)
		}
	}

	if err := os.WriteFile(path, d, 0o600); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for scope, keys := range m.keys {
		c, err := cache.Open(path, &cache.Options{Scope: m.names[scope], Warn: io.Discard})
		if off < format.HeaderSize {
			if !errors.Is(err, cache.ErrCorrupt) {
				t.Fatalf("%s: open: %v, want a damaged header", where, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: open: %v", where, err)
		}
		for _, k := range keys {
			fk := flipKey{scope, k}
			got, ok, err := c.Get([]byte(k))
			want := m.spared(fk, int64(off))
			if err != nil || ok != (want != nil) || !bytes.Equal(got, want) {
				c.Close()
				t.Fatalf("%s: %q in scope %q: %q (found %v, %v), want %q", where, k, m.names[scope], got, ok, err, want)
			}
			if !bytes.Equal(got, m.latest(fk)) {
				lost++
			}
		}
		if err := c.Close(); err != nil {
			t.Fatalf("%s: close: %v", where, err)
		}
	}
	if held := m.held(int64(off)); lost > held {
		t.Fatalf("%s: %d entries lost; the frame that holds the byte holds %d", where, lost, held)
	}
	after, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(after, d) {
		t.Fatalf("%s: a read-write handle cut the file to %d bytes: %v", where, len(after), err)
	}
	return lost
}

// smallFlipImage is a compacted file as compaction lays one out, with
// chunks of 8 entries: the index, scope flip-a in three chunks and flip-b
// in one (in scope hash order), a pad frame, then a journal that rewrites
// keys of both scopes, adds keys, and records uses; its last frame is a
// put.
func smallFlipImage() []byte {
	type group struct {
		scope string
		recs  []format.Record
	}
	rec := func(k, v string) format.Record {
		return format.Record{Key: []byte(k), Value: []byte(v), Inserted: 1700000000000, Used: 1700000000001}
	}
	byScope := map[string][]group{}
	for _, s := range []struct {
		name   string
		chunks int
	}{{"flip-a", 3}, {"flip-b", 1}} {
		for c := 0; c < s.chunks; c++ {
			var recs []format.Record
			for i := 0; i < 8; i++ {
				n := c*8 + i
				recs = append(recs, rec(fmt.Sprintf("%s-key-%03d", s.name, n), fmt.Sprintf("%s-value-%d-%x", s.name, n, uint32(n)*2654435761)))
			}
			byScope[s.name] = append(byScope[s.name], group{s.name, recs})
		}
	}
	names := []string{"flip-a", "flip-b"}
	slices.SortFunc(names, func(a, b string) int { return cmpHash(format.ScopeHash(a), format.ScopeHash(b)) })
	var chunks []byte
	var list []format.IndexedChunk
	for _, name := range names {
		for _, g := range byScope[name] {
			start := len(chunks)
			chunks, _, _ = format.AppendSnapshotFrames(chunks, format.ScopeHash(name), name, g.recs, nil)
			list = append(list, format.IndexedChunk{Scope: format.ScopeHash(name), Len: int64(len(chunks) - start), Count: uint32(len(g.recs)), First: g.recs[0].Key})
		}
	}
	pad := format.AppendFrame(nil, format.TypePad, 0, make([]byte, 24))
	img := format.EncodeHeader(time.Unix(1700000000, 0), format.HeaderCompacted)
	end := int64(len(img) + len(format.AppendSnapshotIndex(nil, list, 0)) + len(chunks) + len(pad))
	img = format.AppendSnapshotIndex(img, list, end)
	img = append(append(img, chunks...), pad...)

	a, b := format.ScopeHash("flip-a"), format.ScopeHash("flip-b")
	img = format.AppendScopeFrame(img, a, "flip-a")
	img = format.AppendPutFrame(img, a, 1700000001000, []byte("flip-a-key-009"), []byte("flip-a-value-9, rewritten"))
	img = format.AppendPutFrame(img, a, 1700000001000, []byte("flip-a-new-1"), []byte("a journal entry"))
	img = format.AppendScopeFrame(img, b, "flip-b")
	img = format.AppendPutFrame(img, b, 1700000001000, []byte("flip-b-key-002"), []byte("flip-b-value-2, rewritten"))
	touch := le.LittleEndian.AppendUint64(nil, a)
	touch = le.LittleEndian.AppendUint64(touch, 1700000002000)
	touch = le.LittleEndian.AppendUint64(touch, xxhash.Sum64String("flip-a-key-001"))
	img = format.AppendFrame(img, format.TypeTouch, 0, touch)
	return format.AppendPutFrame(img, a, 1700000003000, []byte("flip-a-key-020"), []byte("flip-a-value-20, rewritten"))
}

func cmpHash(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Every offset of the small file, one bit each.
func TestBitFlipEveryOffset(t *testing.T) {
	img := smallFlipImage()
	m := modelOf(t, img)
	fr, ok := format.ParseFrame(img[format.HeaderSize:format.HeaderSize+format.FrameLen(img[format.HeaderSize:])], format.HeaderSize)
	x, ok2 := format.DecodeSnapshotIndex(fr, int64(len(img)))
	if !ok || !ok2 || x.End >= int64(len(img)) || len(m.chunks) != 4 || m.entries() != 33 {
		t.Fatalf("the small file: index %v %v, end %d, %d chunks, %d entries", ok, ok2, x.End, len(m.chunks), m.entries())
	}
	path := filepath.Join(t.TempDir(), "flip.ccdb")
	var fig flipFigures
	for off := range img {
		lost := checkFlip(t, path, img, m, off, off%8)
		fig.tried++
		if lost > 0 {
			fig.lostAny++
		}
		fig.maxLost = max(fig.maxLost, lost)
	}
	if fig.maxLost > 8 {
		t.Fatalf("a flip lost %d entries; a chunk holds 8", fig.maxLost)
	}
	t.Logf("small file, %d bytes, %d entries, chunks of %v entries: %d flips, all reported by verify; %d of them lost entries, at most %d per flip",
		len(img), m.entries(), m.chunks, fig.tried, fig.lostAny, fig.maxLost)
}

// bigValue is a value of about 600 bytes, about as compressible as a
// cuDNN benchmark record's text: 1,200 of them make a file of several
// chunks.
func bigValue(i int) []byte {
	var b bytes.Buffer
	for j := 0; b.Len() < 600; j++ {
		fmt.Fprintf(&b, "%d:%x;", j, xxhash.Sum64String(fmt.Sprint(i, j))&0xffffff)
	}
	return b.Bytes()
}

// flipSamples seeded offsets of a file compaction wrote (what convcache
// compact writes: no journal, its last chunk last in the file).
func TestBitFlipSampledOffsets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flip.ccdb")
	now := time.Unix(1700000000, 0) // the same file every run
	const n = 700
	var es []cachefile.Entry
	for i := 0; i < n; i++ {
		scope := gpuA
		if i%5 == 4 {
			scope = gpuB
		}
		es = append(es, entry(scope, rotKey(i), bigValue(i), now, now))
	}
	writeFile(t, path, es...)
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := modelOf(t, img)
	if len(m.chunks) < 4 || m.entries() != n {
		t.Fatalf("%d chunks, %d entries", len(m.chunks), m.entries())
	}
	r := rand.New(rand.NewPCG(22, 7))
	var fig flipFigures
	for range flipSamples {
		off := r.IntN(len(img))
		lost := checkFlip(t, path, img, m, off, r.IntN(8))
		fig.tried++
		if lost > 0 {
			fig.lostAny++
		}
		fig.maxLost = max(fig.maxLost, lost)
	}
	if fig.maxLost > slices.Max(m.chunks) {
		t.Fatalf("a flip lost %d entries; the largest chunk holds %d", fig.maxLost, slices.Max(m.chunks))
	}
	t.Logf("compacted file, %d bytes, %d entries, %d chunks of %d to %d entries: %d flips, all reported by verify; %d of them lost entries, at most %d per flip",
		len(img), m.entries(), len(m.chunks), slices.Min(m.chunks), slices.Max(m.chunks), fig.tried, fig.lostAny, fig.maxLost)
}

var flipSamples = 300
