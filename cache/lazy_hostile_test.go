package cache

// Damaged, forged and fuzzed snapshot indexes (lazy.go): whatever an
// index says, a handle answers what a full load of the file answers.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/convcache/convcache/internal/format"
)

// rewriteIndex returns img with its index frame replaced by one that lists
// chunks with snapshot end end (layout 1), sealed with a valid checksum, so
// that only the index's content can tell it is wrong. What follows the
// index moves with it, and end with it.
func rewriteIndex(img []byte, end uint64, chunks []format.IndexedChunk) []byte {
	oldLen := format.FrameLen(img[format.HeaderSize:])
	delta := int64(len(indexFrame(0, chunks))) - oldLen
	out := append(bytes.Clone(img[:format.HeaderSize]), indexFrame(uint64(int64(end)+delta), chunks)...)
	return append(out, img[format.HeaderSize+oldLen:]...)
}

// indexFrame returns an index frame listing chunks.
func indexFrame(end uint64, chunks []format.IndexedChunk) []byte {
	return format.AppendSnapshotIndex(nil, chunks, int64(end))
}

// with returns a copy of chunks changed by edit.
func with(chunks []format.IndexedChunk, edit func(ch []format.IndexedChunk)) []format.IndexedChunk {
	chs := make([]format.IndexedChunk, len(chunks))
	copy(chs, chunks)
	edit(chs)
	return chs
}

func indexOf(t testing.TB, img []byte) format.SnapshotIndex {
	t.Helper()
	fl := format.FrameLen(img[format.HeaderSize:])
	fr, ok := format.ParseFrame(img[format.HeaderSize:format.HeaderSize+fl], format.HeaderSize)
	x, ok2 := format.DecodeSnapshotIndex(fr, int64(len(img)))
	if !ok || !ok2 {
		t.Fatal("no index")
	}
	return x
}

// Damaged and forged indexes: a handle answers what a full load answers,
// finds and all, and never more than it: a forged index may hide keys of a
// chunk until that chunk is decoded, never return another value.
func TestLazyHostileIndex(t *testing.T) {
	const n = 4000
	good := lazyImage(n)
	x := indexOf(t, good)
	h := format.ScopeHash(lazyScope)
	run := x.Run(h)
	if len(run) < 4 {
		t.Fatalf("%d chunks", len(run))
	}
	j := 0 // position of run[0] in x.Chunks
	for x.Chunks[j].Scope != h {
		j++
	}
	end := uint64(x.End)
	cases := map[string][]byte{
		"intact": good,
		"flipped byte": func() []byte {
			b := bytes.Clone(good)
			b[format.HeaderSize+40] ^= 1
			return b
		}(),
		"truncated": func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint32(b[format.HeaderSize+8:], 30)
			format.Reseal(b[format.HeaderSize:])
			return b
		}(),
		"chunk past EOF": rewriteIndex(good, end, with(x.Chunks, func(c []format.IndexedChunk) { c[j+1].Len = int64(len(good)) })),
		"chunks overlap": rewriteIndex(good, end, with(x.Chunks, func(c []format.IndexedChunk) {
			c[j].Len -= 100
			c[j+1].Len += 100
		})),
		"huge count": rewriteIndex(good, end, with(x.Chunks, func(c []format.IndexedChunk) { c[j+1].Count = 1<<32 - 1 })),
		"count lies": rewriteIndex(good, end, with(x.Chunks, func(c []format.IndexedChunk) { c[j+2].Count-- })),
		// Another scope's chunk, whole and sorted, said to be this
		// scope's: its keys would be this scope's answers.
		"wrong scope":  rewriteIndex(good, end, with(x.Chunks, func(c []format.IndexedChunk) { c[j-1].Scope = h })),
		"end too far":  rewriteIndex(good, end+1, x.Chunks),
		"end too near": rewriteIndex(good, end-uint64(run[len(run)-1].Len), x.Chunks),
		"key order": rewriteIndex(good, end, with(x.Chunks, func(c []format.IndexedChunk) {
			c[j+1].First, c[j+2].First = c[j+2].First, c[j+1].First
		})),
		// Forged but consistent: chunk 2's first key later than it is,
		// so the keys before it are sent to chunk 1; earlier; the last
		// chunk said to be another scope's.
		"forged: first key later": rewriteIndex(good, end, with(x.Chunks, func(c []format.IndexedChunk) {
			c[j+2].First = append(bytes.Clone(c[j+2].First[:len(c[j+2].First)-1]), 'z')
		})),
		"forged: first key earlier": rewriteIndex(good, end, with(x.Chunks, func(c []format.IndexedChunk) {
			c[j+2].First = append(bytes.Clone(c[j+1].First), 'z')
		})),
		"forged: scope": rewriteIndex(good, end, with(x.Chunks, func(c []format.IndexedChunk) { c[j+len(run)-1].Scope = h + 1 })),
		"chunk damaged": func() []byte {
			b := bytes.Clone(good)
			b[run[2].Off+run[2].Len/2] ^= 0x40
			return b
		}(),
	}
	var probe [][]byte
	for i := 0; i < n; i += 37 {
		probe = append(probe, lkey(i))
	}
	for _, ch := range run {
		probe = append(probe, ch.First, append(bytes.Clone(ch.First), 0), ch.First[:len(ch.First)-1])
	}
	probe = append(probe, []byte("a"), []byte("zzz"), lkey(n), okey(0), okey(2))
	// How each case is caught: the index refused at Open, or a chunk that
	// is not what it says read whole on its first decode (a forged first
	// key once a probe reaches the chunk that holds it). An index that
	// says one of this scope's chunks is another's is not caught before
	// Stats reads the file whole.
	refused := map[string]bool{"flipped byte": true, "truncated": true, "chunk past EOF": true,
		"end too far": true, "end too near": true, "key order": true}
	caught := map[string]bool{"chunks overlap": true, "huge count": true, "count lies": true,
		"wrong scope": true, "chunk damaged": true, "forged: first key later": true, "forged: first key earlier": true}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			if name != "intact" && bytes.Equal(data, good) {
				t.Fatal("the case changed nothing")
			}
			path := writeFile(t, data)
			c := openLazyScope(t, path, Options{Mode: ModeReadOnly})
			if lazy := lazyLeft(c) >= 0; lazy == refused[name] {
				t.Fatalf("opened lazily: %v", lazy)
			}
			want := format.ReadContentsOf(data, h)
			for _, k := range probe {
				v, ok, err := c.Get(k)
				e := want.Find(h, xxhash.Sum64(k), k)
				switch {
				case err != nil:
					t.Fatalf("%.24q: %v", k, err)
				case ok && (e == nil || !bytes.Equal(v, e.Value)):
					t.Fatalf("%.24q: returned %q, a full load has %v", k, v, e)
				case !ok && e != nil && !strings.HasPrefix(name, "forged"):
					t.Fatalf("%.24q: missed, a full load finds it", k)
				}
			}
			if lazy := lazyLeft(c) >= 0; lazy == (refused[name] || caught[name]) {
				t.Fatalf("lazy after the finds: %v", lazy)
			}
			// Stats reads the file whole: nothing is hidden any more.
			if st, full := c.Stats(), scopeEntries(want, h); st.Entries != full || (full != n) != (name == "chunk damaged") {
				t.Fatalf("%d entries, a full load has %d of %d", st.Entries, full, n)
			}
			wantFullLoad(t, c, data, probe)
			sameAsEager(t, c, path, probe)
		})
	}
}

// Single flipped bytes anywhere in an indexed file with a journal: the
// handle answers exactly what a full load answers, whatever it decodes
// lazily first.
func TestLazyFlipBytes(t *testing.T) {
	img := lazyImageWithJournal(2500, 400)
	h := format.ScopeHash(lazyScope)
	x := indexOf(t, img)
	offs := map[int]bool{}
	for i := 0; i < int(x.Chunks[0].Off)+64; i++ { // the header and the index
		offs[i] = true
	}
	r := rand.New(rand.NewPCG(17, 17))
	for len(offs) < int(x.Chunks[0].Off)+64+400 {
		offs[r.IntN(len(img))] = true
	}
	var probe [][]byte
	for i := 0; i < 2600; i += 97 {
		probe = append(probe, lkey(i))
	}
	path := filepath.Join(t.TempDir(), "flip.ccdb")
	for off := range offs {
		d := bytes.Clone(img)
		d[off] ^= 0x10
		if err := os.WriteFile(path, d, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Open(path, &Options{Scope: lazyScope, Mode: ModeReadOnly, Warn: io.Discard})
		if err != nil {
			if off < format.HeaderSize {
				continue
			}
			t.Fatalf("flip at %d: %v", off, err)
		}
		r.Shuffle(len(probe), func(i, j int) { probe[i], probe[j] = probe[j], probe[i] })
		wantFullLoad(t, c, d, probe)
		if st, n := c.Stats(), scopeEntries(format.ReadContentsOf(d, h), h); st.Entries != n {
			t.Fatalf("flip at %d: %d entries, a full load has %d", off, st.Entries, n)
		}
		sameAsEager(t, c, path, probe)
		c.Close()
	}
}

// A file whose chunk decodes beyond the decode budget makes the handle read
// the whole file, which reports that chunk as damage, as Open always did.
func TestLazyChunkBeyondBudget(t *testing.T) {
	img := paddedImage()
	x := indexOf(t, img)
	last := x.Chunks[len(x.Chunks)-1]
	// Without the padding the budget does not cover the chunks.
	unpadded := rewriteIndex(img[:last.Off+last.Len], uint64(last.Off+last.Len), x.Chunks)
	path := writeFile(t, unpadded)
	c := openLazyScope(t, path, Options{Mode: ModeReadOnly})
	for i := 39; i >= 0; i-- { // the last chunks first
		if v, ok, err := c.Get(lkey(i)); err != nil || (ok && !bytes.Equal(v, make([]byte, 64<<10))) {
			t.Fatalf("%d: %v", i, err)
		}
	}
	if lazyLeft(c) != -1 || c.Stats().DamagedBytes == 0 {
		t.Fatalf("%d chunks left, %d bytes damaged", lazyLeft(c), c.Stats().DamagedBytes)
	}
	wantFullLoad(t, c, unpadded, [][]byte{lkey(0), lkey(39)})
}

// scopeEntries counts the entries of one scope in a full decode.
func scopeEntries(all *format.Contents, scope uint64) int {
	n := 0
	all.Each(func(e *format.Merged) {
		if e.Scope == scope {
			n++
		}
	})
	return n
}

// sameAsEager checks that c, opened lazily on path, once Stats has read
// the file whole, reports and answers what a handle that read it whole at
// Open does.
func sameAsEager(t *testing.T, c *Cache, path string, probe [][]byte) {
	t.Helper()
	c.Stats()
	openEager = true
	e, err := Open(path, &Options{Scope: c.scope, Mode: ModeReadOnly, Warn: io.Discard})
	openEager = false
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.lazy != nil {
		t.Fatal("openEager opened lazily")
	}
	for _, k := range probe {
		v1, ok1, err1 := c.Get(k)
		v2, ok2, err2 := e.Get(k)
		if ok1 != ok2 || !bytes.Equal(v1, v2) || (err1 == nil) != (err2 == nil) {
			t.Fatalf("%.24q: lazy %q %v %v, eager %q %v %v", k, v1, ok1, err1, v2, ok2, err2)
		}
	}
	s1, s2 := c.Stats(), e.Stats()
	if s1.Entries != s2.Entries || s1.DamagedBytes != s2.DamagedBytes || s1.Snapshot != s2.Snapshot ||
		s1.Journal != s2.Journal || s1.FileBytes != s2.FileBytes || !s1.LastCompaction.Equal(s2.LastCompaction) {
		t.Fatalf("lazy %+v\neager %+v", s1, s2)
	}
	c.mu.Lock()
	e.mu.Lock()
	defer c.mu.Unlock()
	defer e.mu.Unlock()
	if c.snapEntries != e.snapEntries || c.journalPuts != e.journalPuts || c.off != e.off || len(c.scopes) != len(e.scopes) {
		t.Fatalf("lazy: %d snapshot entries, %d puts, offset %d, %d scopes; eager: %d, %d, %d, %d",
			c.snapEntries, c.journalPuts, c.off, len(c.scopes), e.snapEntries, e.journalPuts, e.off, len(e.scopes))
	}
}

// indexedImage returns a file of the given chunk frames behind an index
// listing them as list says.
func indexedImage(chunks []byte, list []format.IndexedChunk) []byte {
	img := format.EncodeHeader(time.Unix(1700000000, 0), format.HeaderCompacted)
	n := len(indexFrame(0, list))
	img = append(img, indexFrame(uint64(format.HeaderSize+n+len(chunks)), list)...)
	return append(img, chunks...)
}

// A chunk that holds a key outside the range its index entry gives (here,
// a key of the next chunk, with an older value) is not used: the handle
// reads the file whole, and answers the later chunk's value.
func TestLazyChunkOutsideItsRange(t *testing.T) {
	// Chunk 0 holds b5 too, with an older value: its last key is past
	// chunk 1's first.
	h := format.ScopeHash(lazyScope)
	c0, _, _ := format.AppendSnapshotFrames(nil, h, lazyScope, []format.Record{
		{Key: []byte("a1"), Value: []byte("a1=v")}, {Key: []byte("a2"), Value: []byte("a2=v")}, {Key: []byte("b5"), Value: []byte("b5=old")}}, nil)
	c1, _, _ := format.AppendSnapshotFrames(nil, h, lazyScope, []format.Record{
		{Key: []byte("b1"), Value: []byte("b1=v")}, {Key: []byte("b5"), Value: []byte("b5=new")}}, nil)
	list := []format.IndexedChunk{
		{Scope: h, Len: int64(len(c0)), Count: 3, First: []byte("a1")},
		{Scope: h, Len: int64(len(c1)), Count: 2, First: []byte("b1")},
	}
	img := indexedImage(append(c0, c1...), list)
	indexOf(t, img)
	path := writeFile(t, img)
	c := openLazyScope(t, path, Options{Mode: ModeReadOnly})
	if lazyLeft(c) != 2 {
		t.Fatalf("not opened lazily: %d", lazyLeft(c))
	}
	mustValue(t, c, []byte("a1"), []byte("a1=v")) // decodes chunk 0: not what the index says
	mustValue(t, c, []byte("b5"), []byte("b5=new"))
	if lazyLeft(c) != -1 {
		t.Fatal("the handle is still lazy")
	}
	sameAsEager(t, c, path, [][]byte{[]byte("a1"), []byte("a2"), []byte("b1"), []byte("b5")})
}

// The padding between the chunks and the journal is checked at Open: a
// frame hidden in a damaged pad frame, which a full scan finds, is found.
func TestLazyPaddingChecked(t *testing.T) {
	img := paddedImage()
	x := indexOf(t, img)
	last := x.Chunks[len(x.Chunks)-1]
	pad := last.Off + last.Len // the first pad frame
	if x.End-pad < 4096 {
		t.Fatalf("%d bytes of padding", x.End-pad)
	}
	hidden := format.AppendPutFrame(nil, format.ScopeHash(lazyScope), 1, []byte("hidden"), []byte("in the padding"))
	copy(img[pad+1000:], hidden)
	path := writeFile(t, img)
	c := openLazyScope(t, path, Options{Mode: ModeReadOnly})
	if lazyLeft(c) != -1 {
		t.Fatal("opened lazily through damaged padding")
	}
	mustValue(t, c, []byte("hidden"), []byte("in the padding"))
	mustValue(t, c, lkey(3), make([]byte, 64<<10))
	// Intact padding is no obstacle.
	c = openLazyScope(t, writeFile(t, paddedImage()), Options{Mode: ModeReadOnly})
	if lazyLeft(c) != len(x.Chunks) {
		t.Fatalf("intact padding: %d chunks left of %d", lazyLeft(c), len(x.Chunks))
	}
	mustValue(t, c, lkey(3), make([]byte, 64<<10))
}

// The fuzz targets' indexed seed opens lazily and answers as the sample.
func TestLazyIndexedSample(t *testing.T) {
	data := indexedSample()
	c, err := Open(writeFile(t, data), &Options{Scope: sampleScope, Mode: ModeReadOnly, Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if lazyLeft(c) != 1 {
		t.Fatalf("%d chunks left", lazyLeft(c))
	}
	for _, e := range buildSample().entries {
		mustValue(t, c, e.key, e.value)
	}
	mustAbsent(t, c, []byte("other-key"))
}

// FuzzLazyIndex opens an indexed file whose index payload is the fuzzer's,
// sealed with a valid checksum: only its content can tell it is wrong.
// Whatever it says, a handle answers each key with a value the file holds
// for that key in its scope, or misses; and once Stats has read the file
// whole, it answers exactly as a handle that read it whole at Open.
func FuzzLazyIndex(f *testing.F) {
	img := lazyImageWithJournal(2500, 300)
	n := format.FrameLen(img[format.HeaderSize:])
	rest := img[format.HeaderSize+n:]
	f.Add(img[format.HeaderSize+format.FrameHeaderSize : format.HeaderSize+n])
	x := indexOf(f, img)
	swapped := with(x.Chunks, func(c []format.IndexedChunk) { c[1].Scope, c[2].Scope = c[2].Scope, c[1].Scope })
	f.Add(indexFrame(uint64(x.End), swapped)[format.FrameHeaderSize:])
	var probe [][]byte
	for i := 0; i < 2600; i += 61 {
		probe = append(probe, lkey(i))
	}
	probe = append(probe, okey(0), []byte("a"), []byte("zzz"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) > 1<<16 {
			return
		}
		data := append(bytes.Clone(img[:format.HeaderSize]), format.AppendFrame(nil, format.TypePad, format.PadIndex, payload)...)
		data = append(data, rest...)
		path := filepath.Join(t.TempDir(), "fuzz.ccdb")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Open(path, &Options{Scope: lazyScope, Mode: ModeReadOnly, Warn: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, k := range probe {
			v, ok, err := c.Get(k)
			if err != nil {
				t.Fatalf("%.20q: %v", k, err)
			}
			var i int
			if ok && (!bytes.HasPrefix(k, []byte("lazy-key-")) || func() bool {
				fmt.Sscanf(string(k), "lazy-key-%06d", &i)
				return !bytes.Equal(v, lval(i, 0)) && !bytes.Equal(v, lval(i, 9))
			}()) {
				t.Fatalf("%.20q: %q is no value of it", k, v)
			}
		}
		sameAsEager(t, c, path, probe)
	})
}

// Random edits of a real index, sealed with valid checksums (a forger's
// indexes rather than a fuzzer's bytes): each handle answers with values
// the file holds for each key, or misses, and after Stats exactly as one
// that read the file whole.
func TestLazyRandomIndexEdits(t *testing.T) {
	img := lazyImageWithJournal(2500, 300)
	h := format.ScopeHash(lazyScope)
	x := indexOf(t, img)
	var probe [][]byte
	for i := 0; i < 2600; i += 53 {
		probe = append(probe, lkey(i))
	}
	for _, ch := range x.Chunks {
		probe = append(probe, ch.First)
	}
	probe = append(probe, okey(0), okey(2))
	r := rand.New(rand.NewPCG(5, 5))
	lazyCount := 0
	for trial := 0; trial < 150; trial++ {
		end := uint64(x.End)
		chunks := with(x.Chunks, func(c []format.IndexedChunk) {
			for e := 0; e < 1+r.IntN(3); e++ {
				i := r.IntN(len(c))
				switch r.IntN(7) {
				case 0:
					j := r.IntN(len(c))
					c[i].Scope, c[j].Scope = c[j].Scope, c[i].Scope
				case 1:
					c[i].Scope = h
				case 2:
					c[i].Count = uint32(int(c[i].Count) + r.IntN(5) - 2)
				case 3:
					k := bytes.Clone(c[i].First)
					k[r.IntN(len(k))] += byte(r.IntN(3) - 1)
					c[i].First = k
				case 4:
					k := bytes.Clone(c[r.IntN(len(c))].First)
					c[i].First = k[:1+r.IntN(len(k))]
				case 5:
					d := int64(r.IntN(64) - 32)
					c[i].Len += d
					if i+1 < len(c) && r.IntN(2) == 0 {
						c[i+1].Len -= d
					}
				case 6:
					end = uint64(int64(end) + int64(r.IntN(64)-32))
				}
			}
		})
		data := rewriteIndex(img, end, chunks)
		path := filepath.Join(t.TempDir(), "edit.ccdb")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Open(path, &Options{Scope: lazyScope, Mode: ModeReadOnly, Warn: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		if lazyLeft(c) >= 0 {
			lazyCount++
		}
		r.Shuffle(len(probe), func(i, j int) { probe[i], probe[j] = probe[j], probe[i] })
		for _, k := range probe {
			v, ok, err := c.Get(k)
			if err != nil {
				t.Fatalf("trial %d, %.20q: %v", trial, k, err)
			}
			var i int
			if ok && (!bytes.HasPrefix(k, []byte("lazy-key-")) || func() bool {
				fmt.Sscanf(string(k), "lazy-key-%06d", &i)
				return !bytes.Equal(v, lval(i, 0)) && !bytes.Equal(v, lval(i, 9))
			}()) {
				t.Fatalf("trial %d, %.20q: %q is no value of it", trial, k, v)
			}
		}
		sameAsEager(t, c, path, probe)
		c.Close()
	}
	if lazyCount < 20 {
		t.Fatalf("only %d of 150 edited indexes were used at all", lazyCount)
	}
	t.Logf("%d of 150 edited indexes opened lazily", lazyCount)
}

// lazyImageWithJournal is lazyImage(n) followed by a journal that puts
// version 9 of every step-th key.
func lazyImageWithJournal(n, step int) []byte {
	img := lazyImage(n)
	h := format.ScopeHash(lazyScope)
	img = format.AppendScopeFrame(img, h, lazyScope)
	for i := 0; i < n; i += step {
		img = format.AppendPutFrame(img, h, 1700000000001, lkey(i), lval(i, 9))
	}
	return img
}

// paddedImage is a compacted file of 40 keys whose 64 KiB values of zeros
// compress so well that Encode pads it to stay inside the decode budget.
func paddedImage() []byte {
	all := format.NewContents(1<<30, 0)
	h := format.ScopeHash(lazyScope)
	for i := 0; i < 40; i++ {
		all.Put(h, format.Record{Key: lkey(i), Value: make([]byte, 64<<10)})
	}
	return all.Encode(time.Now())
}
