package cache_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/convcache/convcache/cache"
)

// BenchmarkOpenFirstFind: a new handle on a file of n entries answers its
// first find (a key in the middle of the snapshot), then closes: the cold
// start of a short-lived process, in a warm page cache and a warm runtime.
// The file of 1 entry is a journal of one record (too small to compact);
// the others are compacted, as a long-lived cache is.
//
//	go test -run '^$' -bench OpenFirstFind -benchtime 20x ./cache
func BenchmarkOpenFirstFind(b *testing.B) {
	fx := newFixtures(b)
	for _, n := range []int{1, 100000, 1000000} {
		b.Run(fmt.Sprintf("entries=%s", sizeName(n)), func(b *testing.B) {
			p := openFixture(b, fx, n)
			k := make([]byte, benchKeySize)
			dst := make([]byte, benchValueSize)
			benchKey(k, n/2)
			b.ReportAllocs()
			for b.Loop() {
				c := benchOpen(b, p, cache.Options{Mode: cache.ModeReadOnly})
				if _, ok, err := c.Find(k, dst); !ok || err != nil {
					b.Fatalf("find after open: %v %v", ok, err)
				}
				c.Close()
			}
		})
	}
}

// BenchmarkOpenEveryKey: a new handle answers every key of a compacted file
// of 100k entries once, in a shuffled order: what a cold process that needs
// the whole cache pays.
func BenchmarkOpenEveryKey(b *testing.B) {
	fx := newFixtures(b)
	const n = 100000
	p := fx.get(b, n)
	keys := benchKeys(n) // in a shuffled order
	dst := make([]byte, benchValueSize)
	b.ReportAllocs()
	for b.Loop() {
		c := benchOpen(b, p, cache.Options{Mode: cache.ModeReadOnly})
		for i, k := range keys {
			if _, ok, err := c.Find(k, dst); !ok || err != nil {
				b.Fatalf("find %d: %v %v", i, ok, err)
			}
		}
		c.Close()
	}
}

// openFixture returns fx's compacted file of n entries, or for n == 1 a
// file holding one put record.
func openFixture(b *testing.B, fx *fixtures, n int) string {
	if n > 1 {
		return fx.get(b, n)
	}
	p := filepath.Join(fx.dir, "one.ccdb")
	c := benchOpen(b, p, cache.Options{})
	k := make([]byte, benchKeySize)
	v := make([]byte, benchValueSize)
	benchKey(k, 0)
	benchValue(v, 0)
	if err := c.Insert(k, v); err != nil {
		b.Fatal(err)
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	return p
}
