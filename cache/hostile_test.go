package cache

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/internal/cachefile"
	"github.com/convcache/convcache/internal/format"
	"github.com/convcache/convcache/internal/hostile"
)

// Regression tests for hostile files (issue 12): each file has valid
// checksums, and each test bounds memory or work by a count it can check
// deterministically, never by time.

const hostileScope = "hostile"

func writeClass(t *testing.T, name string, size int) (string, []byte) {
	t.Helper()
	data := classNamed(t, name).Build(size, hostileScope)
	path := filepath.Join(t.TempDir(), name+".ccdb")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

func openScope(t *testing.T, path string, o Options) *Cache {
	t.Helper()
	if o.Scope == "" {
		o.Scope = hostileScope
	}
	if o.Warn == nil {
		o.Warn = io.Discard
	}
	c, err := Open(path, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// allocated returns the bytes fn allocates (runtime.MemStats.TotalAlloc).
// TotalAlloc counts every goroutine's allocations: see leastAllocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// leastAllocated is the least of three measures of what fn allocates, so
// that a goroutine left running by another test cannot fail a bound.
func leastAllocated(fn func()) uint64 {
	least := allocated(fn)
	for i := 0; i < 2; i++ {
		least = min(least, allocated(fn))
	}
	return least
}

// Point 1: a snapshot frame claiming 2^32-1 entries of the reader's scope
// made newIndex ask for a table of 2^33 slots, which the runtime cannot
// give: a fatal error, not a panic. The count is a hint bounded by the
// chunk's bytes.
func TestForgedCountOwnScope(t *testing.T) {
	path, data := writeClass(t, "count-own", 0)
	if len(data) > 100 {
		t.Fatalf("the class is %d bytes; it was under 100", len(data))
	}
	for _, mode := range []Mode{ModeReadOnly, ModeReadWrite} {
		c := openScope(t, path, Options{Mode: mode})
		if n := indexSlots(c); n > 64 {
			t.Fatalf("mode %v: %d index slots for a %d-byte file", mode, n, len(data))
		}
		if c.snapEntries > int64(len(data)) {
			t.Fatalf("mode %v: %d snapshot entries counted from %d bytes", mode, c.snapEntries, len(data))
		}
	}
	if n := format.ChunkEntries(math.MaxUint32, 77); n > 77 {
		t.Fatalf("ChunkEntries trusts the count: %d", n)
	}
	// The same file as the read-only system tier (CONVCACHE_SYSTEM_PATH)
	// beside a good local file: it opens, misses, and sizes nothing by the
	// forged count.
	local := filepath.Join(t.TempDir(), "local.ccdb")
	c := openScope(t, local, Options{SystemPath: path})
	if c.system == nil {
		t.Fatal("the system tier was not opened")
	}
	if n := indexSlots(c.system); n > 64 {
		t.Fatalf("system tier: %d index slots for a %d-byte file", n, len(data))
	}
	if _, ok, err := c.Get([]byte("any key")); ok || err != nil {
		t.Fatalf("a file of forged counts: hit %v, error %v", ok, err)
	}
	if err := c.Insert([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := c.Get([]byte("k")); !ok || err != nil || string(got) != "v" {
		t.Fatalf("own insert: got %q, %v, %v", got, ok, err)
	}
}

// indexSlots is the size of c's index table.
func indexSlots(c *Cache) int { return len(c.idx.Load().tab.Load().slots) }

// Point 2: forged counts of another scope's chunks drove compaction's
// pre-sizing (gigabytes) and, summed into the snapshot's entry count, kept
// the journal from ever being compacted. Compaction must still happen, and
// leave an honest file.
func TestForgedCountOtherScope(t *testing.T) {
	var data []byte = hostile.Header()
	other := hostile.ScopeHash(hostile.OtherScope)
	for i := 0; i < 40; i++ {
		body := hostile.Compress(hostile.Chunk(hostile.OtherScope, []hostile.Rec{{Key: []byte(fmt.Sprint("o", i)), Value: []byte("v")}}))
		data = hostile.Snapshot(data, other, math.MaxUint32, hostile.FlagZstd, body)
	}
	path := filepath.Join(t.TempDir(), "forged.ccdb")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := openScope(t, path, Options{CompactJournal: 1})
	if bound := int64(len(data)) * format.ExpandFactor / format.MinRecordCost; c.snapEntries > bound {
		t.Fatalf("snapshot counted as %d entries; the bytes bound it to %d", c.snapEntries, bound)
	}
	var alloc uint64
	inserts := 0
	for ; c.Stats().Compactions == 0 && inserts < 1000; inserts++ {
		alloc += allocated(func() {
			if err := c.Insert([]byte(fmt.Sprint("own-", inserts)), []byte("value")); err != nil {
				t.Fatal(err)
			}
			if err := c.Save(); err != nil { // compacts in the foreground when due
				t.Fatal(err)
			}
		})
	}
	if c.Stats().Compactions == 0 {
		t.Fatalf("no compaction after %d inserts (snapshot counted as %d entries)", inserts, c.snapEntries)
	}
	if perInsert := alloc / uint64(inserts); perInsert > 1<<20 {
		t.Fatalf("%d bytes allocated per insert and save", perInsert)
	}
	// The new file is honest: every chunk decodes with exactly its count,
	// and the forged chunks (which never decoded) are gone.
	f, err := cachefile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Damage) != 0 {
		t.Fatalf("damage after compaction: %+v", f.Damage)
	}
	if got := len(f.Entries()); got != inserts {
		t.Fatalf("%d entries after compaction, want %d", got, inserts)
	}
	img, _ := os.ReadFile(path)
	budget := format.NewBudget(int64(len(img)))
	format.Scan(img[format.HeaderSize:], format.HeaderSize, true, func(fr format.Frame) {
		if fr.Type != format.TypeSnapshot {
			return
		}
		head, _ := format.DecodeSnapshotHead(fr.Payload)
		_, recs, _, err := format.DecodeSnapshot(fr, nil, nil, true, &budget)
		if err != nil || uint32(len(recs)) != head.Count {
			t.Fatalf("chunk at %d: %d records, count %d, %v", fr.Off, len(recs), head.Count, err)
		}
	}, nil)
}

// Point 3: decompression bombs. A chunk may decode to at most what a
// writer produces (maxChunkRaw), and a reading of a file decodes at most
// its budget; the rest is damage, never decoded. Memory is checked on the
// index's arena and on the bytes the tools' parse allocates.
func TestDecompressionBombs(t *testing.T) {
	for _, tc := range []struct {
		class string
		size  int
	}{{"bomb-big", 0}, {"bomb-many", 256 << 10}, {"bomb-tiny", 256 << 10}, {"repeat-puts", 256 << 10}, {"zstd-odd", 64 << 10}} {
		t.Run(tc.class, func(t *testing.T) {
			path, data := writeClass(t, tc.class, tc.size)
			budget := format.NewBudget(int64(len(data))).Left()
			var c *Cache
			alloc := leastAllocated(func() { c = openScope(t, path, Options{Mode: ModeReadOnly}) })
			ix := c.idx.Load()
			// An entry's arena bytes are at most its cost plus 24.
			if limit := budget + budget*24/format.MinRecordCost + maxChunk; ix.arenaBytes > limit {
				t.Errorf("open: the arena holds %d bytes for a %d-byte file (limit %d)", ix.arenaBytes, len(data), limit)
			}
			if limit := uint64(2*budget + 8*int64(len(data)) + 8<<20); alloc > limit {
				t.Errorf("open: %d bytes allocated for a %d-byte file (limit %d)", alloc, len(data), limit)
			}
			var f *cachefile.File
			alloc = leastAllocated(func() {
				var err error
				if f, err = cachefile.ReadFile(path); err != nil {
					t.Fatal(err)
				}
			})
			if f.BudgetLeft() < 0 {
				t.Errorf("ReadFile decoded past its budget: %d left", f.BudgetLeft())
			}
			// The merged view holds about three times MinRecordCost per
			// record, and growing it allocates as much again.
			if limit := uint64(6*budget + 8*int64(len(data)) + 8<<20); alloc > limit {
				t.Errorf("ReadFile: %d bytes allocated for a %d-byte file (limit %d)", alloc, len(data), limit)
			}
		})
	}
}

// Writers keep their files inside the budget: values that compress
// extremely well are padded, so a file of twenty 1 MiB runs, far beyond
// what its compressed bytes could justify, still loads whole.
func TestCompressibleValuesArePadded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zeros.ccdb")
	c, err := Open(path, &Options{Scope: hostileScope, CompactJournal: 1, Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, MaxValueSize)
	for i := 0; i < 20; i++ {
		if err := c.Insert([]byte(fmt.Sprint("zeros-", i)), zeros); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if c.Stats().Compactions == 0 {
		t.Fatal("no compaction")
	}
	c.Close()
	// The tools' rewrite leaves a snapshot and nothing else.
	if err := cachefile.Rewrite(path, 0, func(e []cachefile.Entry) ([]cachefile.Entry, error) { return e, nil }); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if min := int64(20*MaxValueSize) / format.ExpandFactor; fi.Size() < min {
		t.Fatalf("the file is %d bytes: not padded to %d", fi.Size(), min)
	}
	f, err := cachefile.ReadFile(path)
	if err != nil || len(f.Damage) != 0 || len(f.Entries()) != 20 {
		t.Fatalf("reading it back: %v, damage %+v, %d entries", err, f.Damage, len(f.Entries()))
	}
	c = openScope(t, path, Options{Mode: ModeReadOnly})
	if n := c.Stats().Entries; n != 20 {
		t.Fatalf("%d entries loaded, want 20", n)
	}
	// Without the padding, the same snapshot is beyond the budget: some
	// chunks are reported as damage, and no value is wrong.
	img, _ := os.ReadFile(path)
	var unpadded []byte
	format.Scan(img[format.HeaderSize:], format.HeaderSize, true, func(fr format.Frame) {
		if fr.Type != format.TypePad {
			unpadded = append(unpadded, img[fr.Off:fr.Off+format.FrameHeaderSize+int64(len(fr.Payload))]...)
		}
	}, nil)
	unpadded = append(img[:format.HeaderSize:format.HeaderSize], unpadded...)
	f, err = cachefile.DecodeFile("unpadded", unpadded)
	if err != nil || len(f.Damage) == 0 || len(f.Entries()) >= 20 {
		t.Fatalf("unpadded: %v, damage %+v, %d entries", err, f.Damage, len(f.Entries()))
	}
	for _, e := range f.Entries() {
		if !bytes.Equal(e.Value, zeros) {
			t.Fatalf("%q: a wrong value", e.Key)
		}
	}
}

// Point 4: a non-final scan that left an unfinished tail is not redone on
// the next miss while the file is unchanged; once the file grows, what was
// appended is found.
func TestUnchangedTailIsNotRescanned(t *testing.T) {
	path, _ := writeClass(t, "sync-storm-tail", 256<<10)
	// A file modified within markSettle is scanned again each time (its
	// times may not tell a change): make this one older.
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	c := openScope(t, path, Options{Mode: ModeReadOnly})
	if _, ok, _ := c.Get([]byte("before")); !ok {
		t.Fatal("the valid entry before the storm is lost")
	}
	before := format.CRCWork()
	for i := 0; i < 10; i++ {
		if _, ok, err := c.Get([]byte("missing")); ok || err != nil {
			t.Fatalf("miss: %v %v", ok, err)
		}
	}
	if work := format.CRCWork() - before; work != 0 {
		t.Fatalf("10 misses on an unchanged file did %d bytes of CRC", work)
	}
	// A peer appends a valid record after the storm.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(hostile.Put(nil, hostile.ScopeHash(hostileScope), []byte("appended"), []byte("value")))
	f.Close()
	if v, ok, err := c.Get([]byte("appended")); !ok || err != nil || string(v) != "value" {
		t.Fatalf("the appended entry: %q %v %v", v, ok, err)
	}
	// A new unfinished tail in a file modified within markSettle (an hour
	// here, so that no pause of this test matters): its times may not tell
	// the next change, so each miss looks again.
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	torn := hostile.Put(nil, hostile.ScopeHash(hostileScope), []byte("torn"), []byte("a record that fails its checksum"))
	torn[len(torn)-1] ^= 1
	f.Write(torn)
	f.Close()
	settle := markSettle
	markSettle = time.Hour
	defer func() { markSettle = settle }()
	for i := 0; i < 2; i++ {
		before = format.CRCWork()
		c.Get([]byte("missing"))
		if format.CRCWork() == before {
			t.Fatalf("miss %d: a tail modified just now was not looked at again", i)
		}
	}
}

// Opening a storm costs CRC work linear in the file, not its square.
func TestOpenStormIsLinear(t *testing.T) {
	for _, name := range []string{"sync-storm", "sync-alternate"} {
		path, data := writeClass(t, name, 1<<20)
		before := format.CRCWork()
		c := openScope(t, path, Options{Mode: ModeReadOnly})
		if work := format.CRCWork() - before; work > int64(format.InitialCredit+8*len(data)) {
			t.Errorf("%s: opening %d bytes did %d bytes of CRC", name, len(data), work)
		}
		if name == "sync-storm" {
			if _, ok, _ := c.Get([]byte("after")); !ok {
				t.Errorf("%s: the valid entry after the storm is lost", name)
			}
		}
	}
}

// Every class opens, takes an insert, compacts and reads back through the
// tools without error, within the memory bounds above.
func TestHostileClassesRoundTrip(t *testing.T) {
	for _, cl := range hostile.Classes() {
		t.Run(cl.Name, func(t *testing.T) {
			path, data := writeClass(t, cl.Name, min(cl.Size, 256<<10))
			// MaxBytes forces a compaction of a large file; a small one
			// needs more journal records than its (bounded) snapshot count.
			c := openScope(t, path, Options{CompactJournal: 1, MaxBytes: 16 << 10})
			for i := 0; ; i++ {
				if err := c.Insert([]byte(fmt.Sprint("filler-", i)), []byte("value")); err != nil {
					t.Fatal(err)
				}
				c.mu.Lock()
				due := c.needCompact()
				c.mu.Unlock()
				if due || i == 1000 {
					break
				}
			}
			if err := c.Insert([]byte("inserted"), []byte("value")); err != nil {
				t.Fatal(err)
			}
			if err := c.Save(); err != nil {
				t.Fatal(err)
			}
			if v, ok, err := c.Get([]byte("inserted")); !ok || err != nil || string(v) != "value" {
				t.Fatalf("after insert: %q %v %v", v, ok, err)
			}
			if c.Stats().Compactions == 0 {
				t.Fatalf("a %d-byte %s file was not compacted", len(data), cl.Name)
			}
			f, err := cachefile.ReadFile(path)
			if err != nil || len(f.Damage) != 0 {
				t.Fatalf("after compaction: %v, damage %+v", err, f.Damage)
			}
			for _, e := range f.Entries() {
				if e.ScopeHash == cachefile.ScopeHash(hostileScope) && e.Scope != hostileScope {
					t.Fatalf("entry %q has scope %q", e.Key, e.Scope)
				}
			}
		})
	}
}

// A panic in a background compaction is recovered: one warning, and the
// handle keeps working (finds, inserts, saves) with compaction off.
func TestCompactionPanicRecovered(t *testing.T) {
	warned := make(chan string, 4)
	path := filepath.Join(t.TempDir(), "panic.ccdb")
	c, err := Open(path, &Options{Scope: hostileScope, CompactJournal: 1, Warn: chanWriter(warned)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	compactHook = func() { panic("injected compaction failure") }
	defer func() { compactHook = nil }()
	for i := 0; i < 2; i++ { // the second insert finds the journal due
		if err := c.Insert([]byte(fmt.Sprint("k", i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if w := <-warned; !strings.Contains(w, "injected compaction failure") {
		t.Fatalf("warning: %q", w)
	}
	compactHook = nil
	if err := c.Insert([]byte("after"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k0", "k1", "after"} {
		if _, ok, err := c.Get([]byte(k)); !ok || err != nil {
			t.Fatalf("%s after the panic: %v %v", k, ok, err)
		}
	}
	select {
	case w := <-warned:
		t.Fatalf("a second warning: %q", w)
	default:
	}
}

type chanWriter chan string

func (w chanWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// A scope is its hash: a name that does not hash to it (another scope's
// entries labelled with the reader's scope name) is ignored, so a tool that
// rewrites the file does not move those entries into the named scope.
func TestMislabelledScopeStaysApart(t *testing.T) {
	path, _ := writeClass(t, "scope-mislabel", 0)
	if err := cachefile.Rewrite(path, 0, func(e []cachefile.Entry) ([]cachefile.Entry, error) { return e, nil }); err != nil {
		t.Fatal(err)
	}
	c := openScope(t, path, Options{Mode: ModeReadOnly})
	for _, k := range []string{hostile.MislabelledKey, hostile.MislabelledKey + "-put"} {
		if v, ok, _ := c.Get([]byte(k)); ok {
			t.Fatalf("%s: another scope's entry served after a rewrite: %q", k, v)
		}
	}
	f, err := cachefile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range f.Entries() {
		if e.ScopeHash != hostile.ScopeHash(hostile.OtherScope) || e.Scope != "" {
			t.Fatalf("entry %q: scope %q #%x", e.Key, e.Scope, e.ScopeHash)
		}
	}
}

// Keys chosen so that their hashes share their low 12 bits all started at
// one slot, so each insert and find walked a run of all of them (quadratic
// to load, finds 100 times slower). Slots now come from the hash times a
// multiplier the file cannot know: the runs stay short. (The test fixes the
// multiplier, so that it is deterministic.)
func TestHashFloodSpreads(t *testing.T) {
	old := indexSeed
	indexSeed = func() uint64 { return 0x9E3779B97F4A7C15 }
	defer func() { indexSeed = old }()
	path, data := writeClass(t, "hash-flood", 128<<10)
	c := openScope(t, path, Options{Mode: ModeReadOnly})
	ix := c.idx.Load()
	tab := ix.tab.Load()
	var keys, total, longest int
	format.Scan(data[format.HeaderSize:], format.HeaderSize, true, func(f format.Frame) {
		p, ok := format.DecodePut(f.Payload)
		if !ok {
			return
		}
		keys++
		h := keyHash(p.Key)
		n := 1
		for i := tab.first(h, ix.mult); ; i = (i + 1) & tab.mask {
			s := tab.slots[i].Load()
			if s == 0 {
				t.Fatalf("key %x not in the index", p.Key)
			}
			ref := s & refMask
			if bytes.Equal(entryKey(ix.cs[ref>>chunkOffBits], int(ref&(maxChunk-1))), p.Key) {
				break
			}
			n++
		}
		total += n
		longest = max(longest, n)
	}, nil)
	if keys < 1000 || total > 4*keys || longest > 64 {
		t.Fatalf("%d keys in %d slots: %d probes in all, the longest %d", keys, len(tab.slots), total, longest)
	}
}

func classNamed(t testing.TB, name string) hostile.Class {
	c, ok := hostile.Named(name)
	if !ok {
		t.Fatalf("no hostile class %q", name)
	}
	return c
}
