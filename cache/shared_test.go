package cache

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Tests of what the C hit path reads (shared.go, index_shared.go) through a
// Publisher that stands in for capi's epochs: it frees what is retired at
// once, or holds it until released, as epochs do while a C reader is inside.

type testPublisher struct {
	mu      sync.Mutex
	hold    bool
	pending []func()
	retired int
}

func (p *testPublisher) Retire(free func()) {
	p.mu.Lock()
	p.retired++
	if p.hold {
		p.pending = append(p.pending, free)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	free()
}

func (p *testPublisher) release() {
	p.mu.Lock()
	pending := p.pending
	p.pending, p.hold = nil, false
	p.mu.Unlock()
	for _, f := range pending {
		f()
	}
}

type testMemory struct {
	mu      sync.Mutex
	dropped int64
}

func (m *testMemory) Compacting() func() { return func() {} }
func (m *testMemory) Dropped(n int64) {
	m.mu.Lock()
	m.dropped += n
	m.mu.Unlock()
}

func sharedKey(i int) []byte {
	return []byte(fmt.Sprintf("shared-key-%06d-%s", i, bytes.Repeat([]byte{'p'}, 90)))
}
func sharedVal(i int) []byte {
	return []byte(fmt.Sprintf("value-%d-%s", i, bytes.Repeat([]byte{'v'}, i%40)))
}

// fillShared writes n entries to a new file and returns its path.
func fillShared(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shared.ccdb")
	c, err := Open(path, &Options{Scope: "s", Warn: io.Discard, LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := c.Insert(sharedKey(i), sharedVal(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func openShared(t *testing.T, path string, p Publisher, m MemoryPolicy) *Cache {
	t.Helper()
	c, err := Open(path, &Options{Scope: "s", Warn: io.Discard, Publish: p, Memory: m, LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// entryRef returns the arena reference and flags of key's entry.
func entryRef(t *testing.T, ix *index, key []byte) (uint64, uint32) {
	t.Helper()
	tab := ix.tab.Load()
	h := keyHash(key)
	for i := tab.first(h, ix.mult); ; i = (i + 1) & tab.mask {
		s := tab.slots[i].Load()
		if s == 0 {
			t.Fatalf("key %q not in the index", key[:18])
		}
		ref := s & refMask
		c := (*ix.chunks.Load())[ref>>chunkOffBits]
		if bytes.Equal(entryKey(c, int(ref&(maxChunk-1))), key) {
			return ref, entryFlags(c, int(ref&(maxChunk-1)))
		}
	}
}

// A load leaves the file's entries cold; the first find of each moves it to
// the end of the arena, so the arena ends up in first-use order, and the
// chunks the load filled are freed once all their entries have moved: the
// handle then holds each entry once, and the memory policy is told.
func TestEntriesMoveToFirstUseOrder(t *testing.T) {
	const n = 20000
	path := fillShared(t, n)
	pub, mem := &testPublisher{}, &testMemory{}
	c := openShared(t, path, pub, mem)
	mem.mu.Lock()
	opened := mem.dropped // the file image the load let go of
	mem.mu.Unlock()
	ix := c.idx.Load()
	for i := 0; i < n; i++ {
		if _, flags := entryRef(t, ix, sharedKey(i)); flags&entryCold == 0 {
			t.Fatalf("entry %d loaded from the file is not cold", i)
		}
	}
	loaded := ix.arenaBytes

	order := rand.New(rand.NewPCG(3, 4)).Perm(n)
	var last uint64
	buf := make([]byte, 256)
	for k, i := range order {
		got, found, err := c.Find(sharedKey(i), buf)
		if err != nil || !found || !bytes.Equal(buf[:got], sharedVal(i)) {
			t.Fatalf("find %d: %q %v %v", i, buf[:got], found, err)
		}
		ref, flags := entryRef(t, c.idx.Load(), sharedKey(i))
		if flags&entryCold != 0 || flags&entryFromFile == 0 {
			t.Fatalf("entry %d after its first find: flags %#x", i, flags)
		}
		if k > 0 && ref <= last {
			t.Fatalf("entry %d (find %d) at %#x, before the previous find's %#x", i, k, ref, last)
		}
		last = ref
		// A second find does not move it again.
		c.Find(sharedKey(i), buf)
		if again, _ := entryRef(t, c.idx.Load(), sharedKey(i)); again != ref {
			t.Fatalf("entry %d moved on its second find", i)
		}
	}
	if ix.coldLeft != 0 {
		t.Fatalf("%d chunks of cold entries left after every entry was used", ix.coldLeft)
	}
	for nchunk, ch := range ix.cs {
		if ch != nil && ix.cold[nchunk] {
			t.Fatalf("chunk %d still holds cold entries", nchunk)
		}
	}
	// Each entry is held once: the arena is no larger than after the load
	// (plus the chunk being filled).
	if ix.arenaBytes > loaded+growChunk {
		t.Fatalf("arena %d bytes after every entry moved, %d after the load", ix.arenaBytes, loaded)
	}
	mem.mu.Lock()
	dropped := mem.dropped - opened
	mem.mu.Unlock()
	if dropped < loaded/2 {
		t.Fatalf("memory policy told of %d freed bytes, the load filled %d", dropped, loaded)
	}
	st := c.Stats()
	if st.Hits != 2*n || st.HitsFile != 2*n || st.Misses != 0 {
		t.Fatalf("stats after %d finds: %+v", 2*n, st)
	}
}

// What a writer retires stays readable until the Publisher frees it: a
// freed chunk's memory is not reported to the memory policy before then.
func TestRetiredChunksWaitForThePublisher(t *testing.T) {
	const n = 5000
	path := fillShared(t, n)
	pub, mem := &testPublisher{hold: true}, &testMemory{}
	t.Cleanup(pub.release) // after the handle's Close: pins never leak
	c := openShared(t, path, pub, mem)
	mem.mu.Lock()
	opened := mem.dropped // the file image the load let go of
	mem.mu.Unlock()
	buf := make([]byte, 256)
	for i := 0; i < n; i++ {
		if _, found, _ := c.Find(sharedKey(i), buf); !found {
			t.Fatalf("miss %d", i)
		}
	}
	mem.mu.Lock()
	early := mem.dropped - opened
	mem.mu.Unlock()
	if early != 0 {
		t.Fatalf("%d bytes reported freed while the publisher held them", early)
	}
	pub.release()
	mem.mu.Lock()
	late := mem.dropped - opened
	mem.mu.Unlock()
	if late == 0 {
		t.Fatal("nothing reported freed after the publisher released")
	}
	for i := 0; i < n; i++ {
		if got, found, _ := c.Find(sharedKey(i), buf); !found || !bytes.Equal(buf[:got], sharedVal(i)) {
			t.Fatalf("find %d after the frees: %q %v", i, buf[:got], found)
		}
	}
}

// Without a Publisher there is no C hit path: entries stay where the load
// put them, and nothing is pinned.
func TestNoPublisherNoMoves(t *testing.T) {
	path := fillShared(t, 2000)
	c := openShared(t, path, nil, nil)
	ix := c.idx.Load()
	before, _ := entryRef(t, ix, sharedKey(7))
	mustValue(t, c, sharedKey(7), sharedVal(7))
	if after, flags := entryRef(t, ix, sharedKey(7)); after != before || flags&entryCold == 0 {
		t.Fatalf("entry moved without a publisher: %#x -> %#x, flags %#x", before, after, flags)
	}
	if ix.pub != nil || c.sh.idx.Load() != 0 {
		t.Fatal("an index published without a publisher")
	}
}

// Close retires everything a handle published: the index keeps no pin of
// its own and publishes no more. (A Pinner collected while it still pins
// is a fatal error when its finalizer runs, so a pin left behind would also
// likely end the test binary after the collections below.)
func TestCloseRetiresEverything(t *testing.T) {
	path := fillShared(t, 3000)
	for round := 0; round < 3; round++ {
		pub := &testPublisher{}
		c, err := Open(path, &Options{Scope: "s", Warn: io.Discard, Publish: pub, LockTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		for i := 0; i < 3000; i += 3 {
			c.Find(sharedKey(i), buf)
		}
		for i := 3000; i < 3500; i++ { // grows the table: the old one is retired
			if err := c.Insert(sharedKey(i), sharedVal(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Load(); err != nil {
			t.Fatal(err)
		}
		ix := c.idx.Load()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if ix.pub != nil {
			t.Fatal("the closed handle's index is still published")
		}
		for n, pin := range ix.chunkPins {
			if pin != nil {
				t.Fatalf("chunk %d still pinned by the index after Close", n)
			}
		}
		if c.sh.idx.Load() != 0 || c.sh.flags.Load() != 0 {
			t.Fatal("a closed handle still publishes")
		}
		if pub.retired == 0 {
			t.Fatal("nothing retired")
		}
		runtime.GC()
		runtime.GC()
	}
}

// Finds that move entries, inserts that grow the table, and reloads that
// replace the index, all at once (run with -race): every value found is the
// one inserted.
func TestMovesUnderConcurrentWriters(t *testing.T) {
	const n = 4000
	path := fillShared(t, n)
	c := openShared(t, path, &testPublisher{}, &testMemory{})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			buf := make([]byte, 256)
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := r.IntN(n)
				got, found, err := c.Find(sharedKey(i), buf)
				if err != nil || !found || !bytes.Equal(buf[:got], sharedVal(i)) {
					errs <- fmt.Errorf("find %d: %q %v %v", i, buf[:got], found, err)
					return
				}
			}
		}(g)
	}
	for i := n; i < n+1500; i++ {
		if err := c.Insert(sharedKey(i), sharedVal(i)); err != nil {
			t.Fatal(err)
		}
		if i%500 == 0 {
			if err := c.Load(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}
