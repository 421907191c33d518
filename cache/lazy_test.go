package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/convcache/convcache/internal/format"
)

// Tests of the lazy open (lazy.go): a compacted file carries a snapshot
// index, Open reads the index and the journal only, and a find decodes the
// one chunk that can hold its key. Every answer must be a full load's.

const lazyScope = "lazy-scope"

func lkey(i int) []byte { return []byte(fmt.Sprintf("lazy-key-%06d-%s", i, strings.Repeat("k", 60))) }

// okey is a key of the other scopes: it sorts before every lkey.
func okey(i int) []byte { return []byte(fmt.Sprint("aaa-other-", i)) }
func lval(i, v int) []byte {
	return []byte(fmt.Sprintf("value-%06d-%d-%s", i, v, strings.Repeat("v", 30)))
}

// lazyImage returns a compacted file image as compaction writes it: n
// entries of lazyScope (several chunks when n is a few thousand), and a
// few of another scope on both sides of it.
func lazyImage(n int) []byte {
	all := format.NewContents(1<<30, n)
	h := format.ScopeHash(lazyScope)
	all.Names[h] = lazyScope
	for i := 0; i < n; i++ {
		all.Put(h, format.Record{Key: lkey(i), Value: lval(i, 0), Inserted: 1700000000000, Used: 1700000000000})
	}
	for _, name := range otherScopes() {
		s := format.ScopeHash(name)
		all.Names[s] = name
		for i := 0; i < 3; i++ {
			all.Put(s, format.Record{Key: okey(i), Value: []byte("other scope"), Inserted: 1, Used: 1})
		}
	}
	return all.Encode(time.Unix(1700000000, 0))
}

// otherScopes returns two scope names whose chunks a file holds before
// lazyScope's and after them (chunks are in scope hash order).
func otherScopes() [2]string {
	var out [2]string
	h := format.ScopeHash(lazyScope)
	for i := 0; out[0] == "" || out[1] == ""; i++ {
		name := fmt.Sprint("other-", i)
		if format.ScopeHash(name) < h {
			out[0] = name
		} else {
			out[1] = name
		}
	}
	return out
}

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lazy.ccdb")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func openLazyScope(t *testing.T, path string, o Options) *Cache {
	t.Helper()
	o.Scope = lazyScope
	return openScope(t, path, o)
}

// lazyRun returns how many chunks of its scope a handle has left to decode
// (-1: it was not opened lazily, or has loaded everything).
func lazyLeft(c *Cache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lazy == nil {
		return -1
	}
	return c.lazy.left
}

// decodes returns how many chunks fn decoded lazily.
func decodes(fn func()) int64 {
	before := chunkDecodes.Load()
	fn()
	return chunkDecodes.Load() - before
}

// wantFullLoad checks that c answers every key of its scope that a full
// decode of data finds, with that value, and misses keys it does not find.
func wantFullLoad(t *testing.T, c *Cache, data []byte, probe [][]byte) {
	t.Helper()
	h := format.ScopeHash(c.scope)
	want := format.ReadContentsOf(data, h)
	for _, k := range probe {
		v, ok, err := c.Get(k)
		if err != nil {
			t.Fatalf("%q: %v", k, err)
		}
		e := want.Find(h, xxhash.Sum64(k), k)
		switch {
		case e == nil && ok:
			t.Fatalf("%q: %q returned, a full load misses", k, v)
		case e != nil && (!ok || !bytes.Equal(v, e.Value)):
			t.Fatalf("%q: %q (found %v), a full load returns %q", k, v, ok, e.Value)
		}
	}
}

// Compaction writes the index first; a new handle reads no chunk at Open,
// and its first find decodes exactly one: the chunk of its key.
func TestLazyOpenDecodesOneChunk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.ccdb")
	w := openLazyScope(t, path, Options{CompactJournal: 1 << 40})
	const n = 4000
	for i := 0; i < n; i++ {
		if err := w.Insert(lkey(i), lval(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	w.opts.CompactJournal = 4 << 10
	w.mu.Unlock()
	if err := w.Save(); err != nil || w.Stats().Compactions != 1 {
		t.Fatalf("save: %v, %d compactions", err, w.Stats().Compactions)
	}
	data, _ := os.ReadFile(path)
	fl := format.FrameLen(data[format.HeaderSize:])
	fr, _ := format.ParseFrame(data[format.HeaderSize:format.HeaderSize+fl], format.HeaderSize)
	x, ok := format.DecodeSnapshotIndex(fr, int64(len(data)))
	if !ok || len(x.Chunks) < 4 {
		t.Fatalf("the compacted file has no index (%v) or %d chunks", ok, len(x.Chunks))
	}

	var c *Cache
	if d := decodes(func() { c = openLazyScope(t, path, Options{}) }); d != 0 || lazyLeft(c) != len(x.Chunks) {
		t.Fatalf("open decoded %d chunks; %d of %d left", d, lazyLeft(c), len(x.Chunks))
	}
	if d := decodes(func() { mustValue(t, c, lkey(n/2), lval(n/2, 0)) }); d != 1 {
		t.Fatalf("the first find decoded %d chunks, want 1", d)
	}
	if d := decodes(func() { mustValue(t, c, lkey(n/2+1), lval(n/2+1, 0)) }); d != 0 {
		t.Fatalf("a key of the same chunk decoded %d chunks", d)
	}
	if d := decodes(func() { mustValue(t, c, lkey(0), lval(0, 0)) }); d != 1 {
		t.Fatalf("a key of another chunk decoded %d chunks", d)
	}
	// Keys before the first chunk and after the last one miss; only the
	// last one's chunk is decoded for it.
	if d := decodes(func() { mustAbsent(t, c, []byte("a")) }); d != 0 {
		t.Fatalf("a key before every chunk decoded %d", d)
	}
	if d := decodes(func() { mustAbsent(t, c, []byte("zzz")) }); d != 1 {
		t.Fatalf("a key after every chunk decoded %d", d)
	}
	st := c.Stats() // reads the rest: Entries counts the whole file
	if st.HitsFile != 3 || st.Misses != 2 || st.Entries != n || lazyLeft(c) != -1 {
		t.Fatalf("stats %+v, %d chunks left", st, lazyLeft(c))
	}
	// An older reader's view is unchanged: the index is part of the
	// snapshot, and the journal starts after it.
	if st.Journal != 0 || st.Snapshot != int64(len(data))-format.HeaderSize {
		t.Fatalf("snapshot %d, journal %d of %d bytes", st.Snapshot, st.Journal, len(data))
	}
}

func mustValue(t *testing.T, c *Cache, k, want []byte) {
	t.Helper()
	v, ok, err := c.Get(k)
	if err != nil || !ok || !bytes.Equal(v, want) {
		t.Fatalf("get %.20q: %q %v %v, want %q", k, v, ok, err, want)
	}
}

func mustAbsent(t *testing.T, c *Cache, k []byte) {
	t.Helper()
	if v, ok, err := c.Get(k); ok || err != nil {
		t.Fatalf("get %.20q: %q %v %v, want a miss", k, v, ok, err)
	}
}

// The journal beats the snapshot: a value appended after compaction is the
// one returned, before and after its chunk is decoded; a key only in the
// journal is found; another scope's keys are not; a miss is a miss.
func TestLazyJournalWins(t *testing.T) {
	const n = 3000
	path := writeFile(t, lazyImage(n))
	w := openLazyScope(t, path, Options{})
	mustInsertOK(t, w, lkey(10), lval(10, 1))     // newer than the snapshot
	mustInsertOK(t, w, lkey(2000), lval(2000, 1)) // in another chunk
	mustInsertOK(t, w, lkey(n+5), lval(n+5, 1))   // in the journal only
	other, err := Open(path, &Options{Scope: otherScopes()[0], Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	mustInsertOK(t, other, lkey(20), []byte("other scope, journal"))
	other.Close()
	w.Close()

	c := openLazyScope(t, path, Options{Mode: ModeStrict})
	mustValue(t, c, lkey(10), lval(10, 1))
	mustValue(t, c, lkey(11), lval(11, 0)) // the same chunk, from the snapshot
	mustValue(t, c, lkey(1999), lval(1999, 0))
	mustValue(t, c, lkey(2000), lval(2000, 1)) // its chunk decoded first
	mustValue(t, c, lkey(n+5), lval(n+5, 1))
	mustValue(t, c, lkey(20), lval(20, 0))
	if _, ok, err := c.Get(lkey(n + 6)); ok || !errors.Is(err, ErrMiss) {
		t.Fatalf("a key nowhere: %v %v", ok, err)
	}
	data, _ := os.ReadFile(path)
	probe := [][]byte{lkey(0), lkey(1), lkey(2), lkey(20), lkey(n - 1), lkey(n + 5), okey(0), okey(1)}
	wantFullLoad(t, openLazyScope(t, path, Options{}), data, probe)
	// Another scope's handle sees its own entries, lazily too.
	oc, err := Open(path, &Options{Scope: otherScopes()[0], Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	mustValue(t, oc, okey(1), []byte("other scope"))
	mustValue(t, oc, lkey(20), []byte("other scope, journal"))
	mustAbsent(t, oc, lkey(100))
}

func mustInsertOK(t *testing.T, c *Cache, k, v []byte) {
	t.Helper()
	if err := c.Insert(k, v); err != nil {
		t.Fatal(err)
	}
}

// This handle's own writes beat the snapshot too, whether they reached the
// file or stayed in memory (read-only).
func TestLazyOwnInsertsWin(t *testing.T) {
	path := writeFile(t, lazyImage(3000))
	c := openLazyScope(t, path, Options{})
	mustInsertOK(t, c, lkey(7), lval(7, 2)) // its chunk not decoded yet
	mustValue(t, c, lkey(8), lval(8, 0))    // decodes it
	mustValue(t, c, lkey(7), lval(7, 2))
	ro := openLazyScope(t, path, Options{Mode: ModeReadOnly})
	if err := ro.Insert(lkey(2500), lval(2500, 3)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only insert: %v", err)
	}
	mustValue(t, ro, lkey(2501), lval(2501, 0))
	mustValue(t, ro, lkey(2500), lval(2500, 3))
}

// Files without an index open as before: one written before it (frames
// appended one by one), one never compacted, one emptied by compaction.
func TestLazyOldFiles(t *testing.T) {
	s := buildSample() // no index: the frames as older versions wrote them
	path := writeFile(t, s.data)
	c, err := Open(path, &Options{Scope: sampleScope, Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if lazyLeft(c) != -1 {
		t.Fatal("a file without an index was opened lazily")
	}
	for _, e := range s.entries {
		mustValue(t, c, e.key, e.value)
	}
	mustAbsent(t, c, []byte("other-key"))

	journal := openLazyScope(t, filepath.Join(t.TempDir(), "j.ccdb"), Options{})
	mustInsertOK(t, journal, lkey(1), lval(1, 0))
	again := openLazyScope(t, journal.Path(), Options{})
	if lazyLeft(again) != -1 {
		t.Fatal("a journal was opened lazily")
	}
	mustValue(t, again, lkey(1), lval(1, 0))

	empty := writeFile(t, format.NewContents(0, 0).Encode(time.Now()))
	e := openLazyScope(t, empty, Options{})
	mustAbsent(t, e, lkey(1))
	if st := e.Stats(); st.LastCompaction.IsZero() || st.Snapshot != 0 {
		t.Fatalf("an emptied file: %+v", st)
	}
}

// reseal recomputes the checksum of the frame at the start of b.
// Finds, inserts, saves (compacting), loads and stats on a lazily opened
// handle from many goroutines, then Close while they run: every value read
// is one that was written (go test -race).
func TestLazyConcurrent(t *testing.T) {
	const n = 4000
	path := writeFile(t, lazyImage(n))
	c := openLazyScope(t, path, Options{CompactJournal: 64 << 10})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errc := make(chan error, 16)
	fail := func(err error) { // never blocks: the first errors are enough
		select {
		case errc <- err:
		default:
		}
	}
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := r.IntN(n)
				v, ok, err := c.Get(lkey(i))
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil || !ok || (!bytes.Equal(v, lval(i, 0)) && !bytes.Equal(v, lval(i, 1))) {
					fail(fmt.Errorf("key %d: %q %v %v", i, v, ok, err))
					return
				}
			}
		}(g)
	}
	wg.Add(1)
	busy := make(chan struct{})
	inserted := 0 // new keys inserted: lkey(n) .. lkey(n+inserted-1)
	// Overwrites keys, adds new ones, saves: compactions replace the file.
	go func() {
		defer wg.Done()
		var once sync.Once
		defer once.Do(func() { close(busy) }) // on a failure too: the test must not hang
		for i := 0; i < 600; i++ {
			if i == 200 {
				once.Do(func() { close(busy) })
			}
			if err := c.Insert(lkey((i*7)%n), lval((i*7)%n, 1)); err != nil {
				if !errors.Is(err, ErrClosed) {
					fail(err)
				}
				return
			}
			if err := c.Insert(lkey(n+i), lval(n+i, 0)); err != nil {
				if !errors.Is(err, ErrClosed) {
					fail(err)
				}
				return
			}
			inserted = i + 1
			if i%100 == 0 {
				c.Save()
				c.Load()
				c.Stats()
			}
		}
	}()
	// A second handle opened lazily on the changing file.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 0; k < 5; k++ {
			o, err := Open(path, &Options{Scope: lazyScope, Warn: io.Discard})
			if err != nil {
				fail(err)
				return
			}
			for i := 0; i < n; i += 501 {
				if v, ok, err := o.Get(lkey(i)); err != nil || !ok || (!bytes.Equal(v, lval(i, 0)) && !bytes.Equal(v, lval(i, 1))) {
					fail(fmt.Errorf("second handle, key %d: %q %v %v", i, v, ok, err))
				}
			}
			o.Close()
		}
	}()
	<-busy // close while the others run
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	// Everything inserted is in the file.
	after := openLazyScope(t, path, Options{})
	for i := 0; i < inserted; i++ {
		mustValue(t, after, lkey(n+i), lval(n+i, 0))
	}
	if inserted < 200 {
		t.Fatalf("%d inserted before close", inserted)
	}
}

// The system tier reads its file whole: it answers from memory.
func TestLazySystemTierLoaded(t *testing.T) {
	sys := writeFile(t, lazyImage(3000))
	c := openLazyScope(t, filepath.Join(t.TempDir(), "own.ccdb"), Options{SystemPath: sys})
	if c.system == nil || lazyLeft(c.system) != -1 {
		t.Fatal("the system tier was left lazy")
	}
	mustValue(t, c, lkey(2999), lval(2999, 0))
	if st := c.Stats(); st.HitsSystem != 1 {
		t.Fatalf("%+v", st)
	}
}
