package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
)

// Tests of handles' lifecycle in the C library: a close touches no other
// handle, a thread's exit leaves no reader record in two hands, and memory
// is reclaimed whatever membarrier allows.

const hitRC = 1 // CONVCACHE_HIT

// lkey is a key of PyTorch's 104 bytes.
func lkey(i int) []byte {
	return []byte(fmt.Sprintf("lifecycle-key-%06d-%s", i, strings.Repeat("k", 83)))
}

func lval(i int) []byte { return []byte(fmt.Sprintf("value-%d-%s", i, strings.Repeat("v", i%40))) }

// openCache opens a handle as ccgo_open does, with the library's publisher.
func openCache(t testing.TB, path string) (*cache.Cache, uintptr) {
	t.Helper()
	c, err := cache.Open(path, &cache.Options{Scope: "lifecycle", Warn: io.Discard, LockTimeout: time.Minute,
		Publish: &published, Memory: &memory})
	if err != nil {
		t.Fatal(err)
	}
	tok, ok := openHandle(c)
	if !ok {
		t.Fatal("no token")
	}
	return c, tok
}

// A close gives its slot back before it clears the slot in the C table; an
// open that takes the slot in between keeps its C hit path. Before the fix
// the close cleared the slot whatever it held: the new handle's hits went
// through Go, and convcache_peek missed them.
func TestCloseClearsOnlyItsOwnSlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slots.ccdb")
	_, tokA := openCache(t, path)
	var b *cache.Cache
	var tokB uintptr
	hook := func() { b, tokB = openCache(t, path) }
	testHookRemoved.Store(&hook)
	err := closeHandle(tokA)
	testHookRemoved.Store(nil)
	if err != nil {
		t.Fatal(err)
	}
	if tokB&(maxSlots-1) != tokA&(maxSlots-1) || tokB == tokA {
		t.Fatalf("the open did not take the closed handle's slot: %#x, %#x", tokA, tokB)
	}
	defer closeHandle(tokB)
	if err := b.Insert(lkey(1), lval(1)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	if rc, n := peek(tokB, lkey(1), buf); rc != hitRC || !bytes.Equal(buf[:n], lval(1)) {
		t.Fatalf("peek on the handle that took the slot: %d %q, want a hit", rc, buf[:n])
	}
	if rc, _ := peek(tokA, lkey(1), buf); rc != 0 {
		t.Fatalf("peek under the closed token: %d, want 0", rc)
	}
}

// A hit from a thread-exit destructor that runs after the library's own
// (which gives the thread's reader record back) is answered with a record
// the thread holds for that read, never with the one it gave back, which a
// new thread may be holding. Before the fix the destructor read with the
// released record (state -1).
func TestHitFromExitingThread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exit.ccdb")
	c, tok := openCache(t, path)
	defer closeHandle(tok)
	if err := c.Insert(lkey(2), lval(2)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		first, last, state := exitPeek(tok, lkey(2))
		if first != hitRC || last != hitRC {
			t.Fatalf("peeks from the thread: %d, then from its exit: %d; want hits", first, last)
		}
		if state < 0 {
			t.Fatal("a hit from a thread-exit destructor used the reader record the thread had given back")
		}
	}
}

// Where membarrier's query succeeds but every other call is refused (a
// nohz_full kernel, a seccomp filter), readers fence and what writers
// retire is freed. It runs in a child process: registration happens once
// per process. Before the fix nothing was ever freed: after 40 reloads the
// child held 42 published indexes.
func TestReclaimWithoutMembarrier(t *testing.T) {
	if os.Getenv("CONVCACHE_TEST_REFUSE_MEMBARRIER") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReclaimWithoutMembarrier$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "CONVCACHE_TEST_REFUSE_MEMBARRIER=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS")) {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	refuseMembarrier()
	registerMembarrier()
	if m := readerMode(); m != 1 {
		t.Fatalf("reader mode %d after a refused registration, want 1 (readers fence)", m)
	}
	const keys, reloads = 500, 40
	path := filepath.Join(t.TempDir(), "reclaim.ccdb")
	c, tok := openCache(t, path)
	for i := 0; i < keys; i++ {
		if err := c.Insert(lkey(i), lval(i)); err != nil {
			t.Fatal(err)
		}
	}
	// A C reader hits all along: what it may hold must wait for it.
	stop, reading := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	var hits, bad atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		buf := make([]byte, 256)
		for i := 0; ; i++ {
			if i == 1 {
				close(reading) // its record is made, its first hit counted
			}
			select {
			case <-stop:
				return
			default:
			}
			k := i % keys
			if rc, n := peek(tok, lkey(k), buf); rc == hitRC {
				hits.Add(1)
				if !bytes.Equal(buf[:n], lval(k)) {
					bad.Add(1)
				}
			}
		}
	}()
	<-reading
	maxIndexes := int64(0)
	for r := 0; r < reloads; r++ {
		// Replace the file with a copy: the load reads it into a new index
		// and retires the old one.
		img, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+".new", img, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
		if err := c.Load(); err != nil {
			t.Fatal(err)
		}
		published.reclaim()
		_, x := cache.Pinned()
		maxIndexes = max(maxIndexes, x)
	}
	close(stop)
	wg.Wait()
	published.reclaim()
	_, live := cache.Pinned()
	t.Logf("%d reloads: at most %d indexes published at once, %d after; %d retirements waiting; %d C hits checked",
		reloads, maxIndexes, live, published.waiting.Load(), hits.Load())
	if bad.Load() > 0 {
		t.Fatalf("%d C hits returned a wrong value", bad.Load())
	}
	if hits.Load() == 0 {
		t.Fatal("the C reader never hit")
	}
	if live != 1 {
		t.Fatalf("%d indexes published after %d reloads of one handle; want 1: what the reloads retired was never freed", live, reloads)
	}
	if err := closeHandle(tok); err != nil {
		t.Fatal(err)
	}
	published.reclaim()
	if p, x := cache.Pinned(); p != 0 || x != 0 || published.waiting.Load() != 0 {
		t.Fatalf("after close: %d Pinners, %d indexes, %d retirements waiting; want none", p, x, published.waiting.Load())
	}
}

// BenchmarkHit: convcache_find answering hits in C, from a loop in C (no
// cgo call per find), over 1,000 keys of PyTorch's 104-byte shape.
func BenchmarkHit(b *testing.B) {
	registerMembarrier() // the steady state: readers do not fence
	const keys = 1000
	path := filepath.Join(b.TempDir(), "hit.ccdb")
	c, tok := openCache(b, path)
	defer closeHandle(tok)
	var all []byte
	for i := 0; i < keys; i++ {
		if err := c.Insert(lkey(i), lval(i)); err != nil {
			b.Fatal(err)
		}
		all = append(all, lkey(i)...)
	}
	b.ResetTimer()
	if hits := findLoop(tok, all, len(lkey(0)), uint64(b.N)); hits != uint64(b.N) {
		b.Fatalf("%d hits of %d finds", hits, b.N)
	}
}
