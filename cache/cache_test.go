package cache_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/lock"
)

// A handle sees what another handle (standing in for another process)
// inserted after it opened, without Load: a miss reads the file's new tail.
func TestLiveSharing(t *testing.T) {
	e := newEnv(t)
	a, b := e.open(cache.Options{}), e.open(cache.Options{})
	mustMiss(t, b, key(1))
	mustInsert(t, a, key(1), val(1, 0))
	mustGet(t, b, key(1), val(1, 0))
	if st := b.Stats(); st.HitsFile != 1 || st.Misses != 1 {
		t.Fatalf("stats %+v", st)
	}
	// And after a compaction replaced the file under b.
	for i := 2; i < 200; i++ {
		mustInsert(t, a, key(i), val(i, 0))
	}
	c := e.open(cache.Options{CompactJournal: 1})
	mustInsert(t, c, key(500), val(500, 0))
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if c.Stats().Compactions != 1 {
		t.Fatal("no compaction")
	}
	mustGet(t, b, key(500), val(500, 0))
	mustGet(t, b, key(199), val(199, 0))
}

func TestScopes(t *testing.T) {
	e := newEnv(t)
	h100 := e.open(cache.Options{Scope: "H100;driver=580;cudnn=91000"})
	a100 := e.open(cache.Options{Scope: "A100;driver=580;cudnn=91000"})
	def := e.open(cache.Options{})
	mustInsert(t, h100, key(1), val(1, 1))
	mustMiss(t, a100, key(1))
	mustMiss(t, def, key(1))
	mustInsert(t, a100, key(1), val(1, 2))
	mustGet(t, h100, key(1), val(1, 1))
	// Compaction keeps every scope's entries apart.
	c := e.open(cache.Options{Scope: "other", CompactJournal: 1})
	mustInsert(t, c, key(2), val(2, 0))
	if err := c.Save(); err != nil || c.Stats().Compactions != 1 {
		t.Fatal("compaction", err)
	}
	for _, s := range []struct {
		scope string
		want  []byte
	}{{"H100;driver=580;cudnn=91000", val(1, 1)}, {"A100;driver=580;cudnn=91000", val(1, 2)}} {
		fresh := e.open(cache.Options{Scope: s.scope})
		mustGet(t, fresh, key(1), s.want)
		mustMiss(t, fresh, key(2))
	}
	if _, err := cache.Open(e.path, &cache.Options{Scope: strings.Repeat("s", cache.MaxScopeSize+1)}); !errors.Is(err, cache.ErrSize) {
		t.Fatalf("long scope: %v", err)
	}
}

// Compaction merges what every handle wrote and never loses an append made
// by another handle while it runs.
func TestCompactionConcurrentAppends(t *testing.T) {
	e := newEnv(t)
	compactor := e.open(cache.Options{CompactJournal: 1})
	writers := []*cache.Cache{e.open(cache.Options{}), e.open(cache.Options{Scope: "b"})}
	var wg sync.WaitGroup
	var done atomic.Bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !done.Load(); i++ {
			if err := compactor.Insert(key(1_000_000+i), val(i, 0)); err != nil {
				t.Error(err)
				return
			}
			if err := compactor.Save(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	// Halfway, each writer waits for 5 compactions: appends come before,
	// during and after compactions, whatever the scheduling.
	const n = 3000
	var writing sync.WaitGroup
	for w, c := range writers {
		writing.Add(1)
		go func(w int, c *cache.Cache) {
			defer writing.Done()
			for i := 0; i < n; i++ {
				if err := c.Insert(key(w*n+i), val(w*n+i, 0)); err != nil {
					t.Error(err)
					return
				}
				for i == n/2 && compactor.Stats().Compactions < 5 {
					time.Sleep(time.Millisecond)
				}
			}
		}(w, c)
	}
	writing.Wait()
	done.Store(true)
	wg.Wait()
	t.Logf("%d compactions during the appends", compactor.Stats().Compactions)
	for w, scope := range []string{"", "b"} {
		fresh := e.open(cache.Options{Scope: scope})
		for i := 0; i < n; i++ {
			mustGet(t, fresh, key(w*n+i), val(w*n+i, 0))
		}
	}
}

// The journal is compacted once it outgrows the snapshot, so the file does
// not grow without bound when the same keys are rewritten.
func TestJournalBounded(t *testing.T) {
	e := newEnv(t)
	c := e.open(cache.Options{CompactJournal: 64 << 10})
	for round := 0; round < 50; round++ {
		for i := 0; i < 200; i++ {
			mustInsert(t, c, key(i), val(i, round))
		}
	}
	st := c.Stats()
	if st.Compactions == 0 || st.FileBytes > 400<<10 {
		t.Fatalf("10000 rewrites of 200 keys: %d compactions, file %d bytes", st.Compactions, st.FileBytes)
	}
	fresh := e.open(cache.Options{})
	for i := 0; i < 200; i++ {
		mustGet(t, fresh, key(i), val(i, 49))
	}
}

// MaxEntries evicts the least recently used, including use recorded by other
// handles (touch frames written by Save).
func TestEvictionLRU(t *testing.T) {
	e := newEnv(t)
	w := e.open(cache.Options{})
	for i := 0; i < 300; i++ {
		mustInsert(t, w, key(i), val(i, 0))
	}
	time.Sleep(5 * time.Millisecond)
	// Another handle uses keys 0..49 and records that use.
	user := e.open(cache.Options{})
	for i := 0; i < 50; i++ {
		mustGet(t, user, key(i), val(i, 0))
	}
	if err := user.Save(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	// The compacting handle itself uses 250..299.
	// Eviction goes to 90% of the bound: 113 keeps exactly the 101 entries
	// used recently.
	bounded := e.open(cache.Options{MaxEntries: 113, CompactJournal: 1})
	for i := 250; i < 300; i++ {
		mustGet(t, bounded, key(i), val(i, 0))
	}
	mustInsert(t, bounded, key(1000), val(1000, 0))
	if err := bounded.Save(); err != nil {
		t.Fatal(err)
	}
	st := bounded.Stats()
	if st.Evictions != 200 || st.Entries != 101 {
		t.Fatalf("stats %+v", st)
	}
	fresh := e.open(cache.Options{})
	for i := 0; i < 50; i++ {
		mustGet(t, fresh, key(i), val(i, 0))
	}
	for i := 250; i < 300; i++ {
		mustGet(t, fresh, key(i), val(i, 0))
	}
	mustGet(t, fresh, key(1000), val(1000, 0))
	for i := 50; i < 250; i++ {
		mustMiss(t, fresh, key(i))
	}
}

func TestMaxBytes(t *testing.T) {
	e := newEnv(t)
	c := e.open(cache.Options{MaxBytes: 256 << 10, CompactJournal: 1 << 30})
	big := bytes.Repeat([]byte("v"), 2000) // incompressible enough not to matter
	for i := 0; i < 2000; i++ {
		v := append([]byte(fmt.Sprint(i, ":")), big...)
		mustInsert(t, c, key(i), v)
	}
	if err := c.Save(); err != nil { // inserts compact in the background; Save waits
		t.Fatal(err)
	}
	fi, err := os.Stat(e.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 256<<10 || c.Stats().Evictions == 0 {
		t.Fatalf("file %d bytes with MaxBytes 256 KiB, %d evictions", fi.Size(), c.Stats().Evictions)
	}
	// The newest entries are kept.
	mustGet(t, c, key(1999), append([]byte("1999:"), big...))
}

// A stalled process holding the file lock: finds keep answering, an insert
// waits at most the lock timeout and is kept in memory, and the next save
// after the holder goes away persists it.
func TestStalledLockHolder(t *testing.T) {
	e := newEnv(t)
	const timeout = time.Second
	c := e.open(cache.Options{LockTimeout: timeout})
	mustInsert(t, c, key(1), val(1, 0))
	held, err := lock.New(e.path + ".lock").Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Finds never wait for the lock: through a handle whose lock timeout is
	// an hour, they would hang (and the test time out) if they did.
	reader := e.open(cache.Options{LockTimeout: time.Hour})
	mustGet(t, reader, key(1), val(1, 0))
	mustMiss(t, reader, key(99))
	start := time.Now()
	err = c.Insert(key(2), val(2, 0))
	waited := time.Since(start)
	if !errors.Is(err, cache.ErrPending) || waited < timeout {
		t.Fatalf("insert: %v after %v", err, waited)
	}
	mustGet(t, c, key(2), val(2, 0)) // usable in memory
	// A second insert does not wait the whole timeout again: it tries the
	// lock once (a second of slack for a loaded machine).
	start = time.Now()
	if err := c.Insert(key(3), val(3, 0)); !errors.Is(err, cache.ErrPending) {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= timeout {
		t.Fatalf("second insert waited %v", d)
	}
	if err := c.Save(); !errors.Is(err, cache.ErrLock) {
		t.Fatalf("save under a stalled lock: %v", err)
	}
	if c.Stats().Pending != 2 {
		t.Fatalf("pending %d", c.Stats().Pending)
	}
	held.Unlock()
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	fresh := e.open(cache.Options{})
	mustGet(t, fresh, key(2), val(2, 0))
	mustGet(t, fresh, key(3), val(3, 0))
}

func TestTornTail(t *testing.T) {
	e := newEnv(t)
	c := e.open(cache.Options{})
	for i := 0; i < 100; i++ {
		mustInsert(t, c, key(i), val(i, 0))
	}
	c.Close()
	f, _ := os.OpenFile(e.path, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte("\xe7CCR\x01\x00\x00\x00\xff\x00\x00\x00garbage of a torn write"))
	f.Close()
	torn, _ := os.Stat(e.path)
	r := e.open(cache.Options{})
	for i := 0; i < 100; i++ {
		mustGet(t, r, key(i), val(i, 0))
	}
	// Without the lock a reader cannot tell a torn tail from a write in
	// progress: it waits. A writer, holding the lock, knows: it cuts the
	// tail off before appending.
	w := e.open(cache.Options{CompactJournal: 1})
	mustInsert(t, w, key(100), val(100, 0))
	if w.Stats().DamagedBytes == 0 {
		t.Fatal("torn tail not reported by the writer")
	}
	if st, _ := os.Stat(e.path); st.Size() >= torn.Size()+150 {
		t.Fatalf("torn tail kept: %d -> %d bytes", torn.Size(), st.Size())
	}
	mustGet(t, r, key(100), val(100, 0)) // the reader carries on past it
	fresh := e.open(cache.Options{})
	mustGet(t, fresh, key(100), val(100, 0))
	if err := w.Save(); err != nil {
		t.Fatal(err)
	}
	clean := e.open(cache.Options{})
	if clean.Stats().DamagedBytes != 0 {
		t.Fatal("compaction kept the damage")
	}
	for i := 0; i <= 100; i++ {
		mustGet(t, clean, key(i), val(i, 0))
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	c, err := cache.Open(good, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	hdr, _ := os.ReadFile(good)
	// A newer version's header, sealed by its writer: its checksum covers
	// its version. (One whose checksum covers this version's number is
	// this version's header, damaged: ErrCorrupt.)
	newer := bytes.Clone(hdr)
	newer[8] = 7
	binary.LittleEndian.PutUint32(newer[28:], crc32.Checksum(newer[:28], crc32.MakeTable(crc32.Castagnoli)))
	damaged := bytes.Clone(hdr)
	damaged[8] ^= 0x06
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, cache.ErrFormat},
		{"foreign", []byte("PK\x03\x04 a zip file, not a cache......."), cache.ErrFormat},
		{"truncated", hdr[:20], cache.ErrCorrupt},
		{"newer", newer, cache.ErrFormat},
		{"damaged version", damaged, cache.ErrCorrupt},
	}
	for _, cs := range cases {
		p := filepath.Join(dir, cs.name)
		os.WriteFile(p, cs.data, 0o600)
		_, err := cache.Open(p, nil)
		if !errors.Is(err, cs.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", cs.name, err)
		}
		after, _ := os.ReadFile(p)
		if !bytes.Equal(after, cs.data) {
			t.Errorf("%s: file was modified", cs.name)
		}
	}
	if _, err := cache.Open(dir, nil); !errors.Is(err, cache.ErrInvalid) {
		t.Errorf("directory: %v", err)
	}
	if _, err := cache.Open(filepath.Join(good, "x", "y"), nil); !errors.Is(err, cache.ErrIO) {
		t.Errorf("below a file: %v", err)
	}
}

// A file that another process replaced with a foreign one is never
// written: inserts fail with ErrFormat and finds keep answering from memory.
func TestReplacedByForeignFile(t *testing.T) {
	e := newEnv(t)
	c := e.open(cache.Options{})
	mustInsert(t, c, key(1), val(1, 0))
	foreign := []byte("not a cache at all, someone's notes....")
	os.WriteFile(e.path+".new", foreign, 0o600)
	os.Rename(e.path+".new", e.path)
	if err := c.Insert(key(2), val(2, 0)); !errors.Is(err, cache.ErrFormat) {
		t.Fatalf("insert: %v", err)
	}
	mustGet(t, c, key(1), val(1, 0))
	mustMiss(t, c, key(3))
	if got, _ := os.ReadFile(e.path); !bytes.Equal(got, foreign) {
		t.Fatal("foreign file modified")
	}
}

func TestModes(t *testing.T) {
	e := newEnv(t)
	rw := e.open(cache.Options{})
	mustInsert(t, rw, key(1), val(1, 0))

	ro := e.open(cache.Options{Mode: cache.ModeReadOnly})
	mustGet(t, ro, key(1), val(1, 0))
	if err := ro.Insert(key(2), val(2, 0)); !errors.Is(err, cache.ErrReadOnly) {
		t.Fatal(err)
	}
	mustGet(t, ro, key(2), val(2, 0))
	mustMiss(t, rw, key(2))

	off, err := cache.Open(filepath.Join(t.TempDir(), "never", "x.ccdb"), &cache.Options{Mode: cache.ModeOff})
	if err != nil {
		t.Fatal(err)
	}
	mustInsert(t, off, key(1), val(1, 0))
	mustMiss(t, off, key(1))
	if _, err := os.Stat(filepath.Dir(off.Path())); err == nil && off.Path() != "" {
		t.Fatal("off mode touched the file system")
	}

	re := e.open(cache.Options{Mode: cache.ModeRecache})
	mustMiss(t, re, key(1)) // hits are ignored
	mustInsert(t, re, key(1), val(1, 9))
	fresh := e.open(cache.Options{})
	mustGet(t, fresh, key(1), val(1, 9))

	strict := e.open(cache.Options{Mode: cache.ModeStrict})
	mustGet(t, strict, key(1), val(1, 9))
	if _, _, err := strict.Get(key(77)); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("strict miss: %v", err)
	}
}

func TestUntrustedFile(t *testing.T) {
	e := newEnv(t)
	c := e.open(cache.Options{})
	mustInsert(t, c, key(1), val(1, 0))
	c.Close()
	os.Chmod(e.path, 0o666)
	shared := e.open(cache.Options{})
	if ro, why := shared.ReadOnly(); !ro || !strings.Contains(why, "writable by group or others") {
		t.Fatalf("group-writable file opened read-write (%v)", why)
	}
	if !strings.Contains(e.warnings(), "CONVCACHE_TRUST_SHARED") {
		t.Fatalf("no warning: %q", e.warnings())
	}
	mustMiss(t, shared, key(1)) // not served: group or others could have written it
	if err := shared.Insert(key(2), val(2, 0)); !errors.Is(err, cache.ErrReadOnly) {
		t.Fatal(err)
	}
	trusting := e.open(cache.Options{TrustShared: true})
	if ro, _ := trusting.ReadOnly(); ro {
		t.Fatal("TrustShared ignored")
	}
	mustInsert(t, trusting, key(3), val(3, 0))
	if os.Geteuid() == 0 {
		os.Chmod(e.path, 0o600)
		os.Chown(e.path, 65534, 65534)
		other := e.open(cache.Options{})
		if ro, why := other.ReadOnly(); !ro || !strings.Contains(why, "owned by uid 65534") {
			t.Fatalf("foreign owner: %v %q", ro, why)
		}
	}
}

// 8 goroutines mix finds and inserts on one handle and on two handles of
// one file. Run with -race. No value is ever one not inserted for its key,
// and nothing inserted is lost.
func TestConcurrentHandles(t *testing.T) {
	e := newEnv(t)
	hs := []*cache.Cache{e.open(cache.Options{}), e.open(cache.Options{})}
	const keys, ops = 500, 4000
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			c := hs[g%2]
			buf := make([]byte, 256)
			for i := 0; i < ops; i++ {
				k := (i*7919 + g*31) % keys
				n, found, err := c.Find(key(k), buf)
				if err != nil {
					t.Error(err)
					return
				}
				if found {
					var kk, vv int
					if _, err := fmt.Sscanf(string(buf[:n]), "algo=%d time=%d.", &kk, &vv); err != nil || vv != k {
						t.Errorf("key %d: wrong value %q", k, buf[:n])
						return
					}
				}
				if !found || i%5 == 0 {
					if err := c.Insert(key(k), val(k, g)); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	for _, c := range hs {
		for k := 0; k < keys; k++ {
			if _, ok, err := c.Get(key(k)); !ok || err != nil {
				t.Fatalf("key %d lost: %v", k, err)
			}
		}
	}
}

func TestClosed(t *testing.T) {
	e := newEnv(t)
	c := e.open(cache.Options{})
	c.Close()
	if err := c.Insert(key(1), val(1, 0)); !errors.Is(err, cache.ErrClosed) {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal("second close:", err)
	}
}

var _ io.Writer = (*env)(nil)
