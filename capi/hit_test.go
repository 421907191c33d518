package main

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/convcache/convcache/cache"
)

// The C hit path reads the Go side's memory: every offset and constant it
// uses must be the Go side's.
func TestSharedLayoutAgrees(t *testing.T) {
	for name, want := range cache.SharedLayout() {
		if got := sharedLayout(name); got != want {
			t.Errorf("%s: C has %d, Go %d", name, got, want)
		}
	}
	if got := sharedLayout("no such field"); got != ^uintptr(0) {
		t.Errorf("unknown name: %d", got)
	}
}

// A key's slot is chosen from its hash: C must hash exactly as Go does, at
// every length of every path of the algorithm (0-16, 17-128, 129-240, and
// the long one, over several 1 KiB blocks) up to the longest key.
func TestKeyHashAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= cache.MaxKeySize; n++ {
		for rep := 0; rep < 2; rep++ {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			if got, want := keyHash(b), xxh3.Hash(b); got != want {
				t.Fatalf("length %d: C %x, Go %x", n, got, want)
			}
		}
	}
}

// Memory retired while a C reader is inside a hit is not freed until that
// reader has left; memory retired before a reader entered does not wait for
// it; and readers that come and go never hold a free up forever.
func TestRetireWaitsForReaders(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	registerMembarrier()

	var early atomic.Bool
	published.Retire(func() { early.Store(true) }) // no reader inside
	published.reclaim()
	if !early.Load() {
		t.Fatal("retired with no reader inside, and not freed")
	}

	testEnter() // a reader stopped halfway through a hit
	var held atomic.Bool
	published.Retire(func() { held.Store(true) })
	for i := 0; i < 3; i++ {
		published.reclaim()
	}
	if held.Load() {
		testExit()
		t.Fatal("freed while a reader that could hold it was inside")
	}

	// A reader on another thread entering after the retire does not hold
	// up what was retired before it entered.
	var later atomic.Bool
	published.Retire(func() { later.Store(true) })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		testEnter()
		published.reclaim()
		testExit()
	}()
	wg.Wait()
	if later.Load() {
		testExit()
		t.Fatal("freed while the first reader (inside since before that retire) was inside")
	}

	testExit()
	published.reclaim()
	if !held.Load() || !later.Load() {
		t.Fatalf("not freed after the reader left: %v %v", held.Load(), later.Load())
	}

	var after atomic.Bool
	published.Retire(func() { after.Store(true) })
	done := make(chan struct{})
	go func() { // readers that keep coming and going
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for {
			select {
			case <-done:
				return
			default:
				testEnter()
				testExit()
			}
		}
	}()
	for i := 0; i < 1000 && !after.Load(); i++ {
		published.reclaim()
		runtime.Gosched()
	}
	close(done)
	if !after.Load() {
		t.Fatal("readers entering and leaving held a free up for 1000 reclaims")
	}
}
