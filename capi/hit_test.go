package main

import (
	"math/rand/v2"
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
