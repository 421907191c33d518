package cache_test

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/convcache/convcache/cache"
)

// BenchmarkMissNoChange measures a miss when no other process has written
// anything: the freshness check that makes peers' inserts visible (one
// fstat) plus the lookups. This is the figure issue 3 asks for.
func BenchmarkMissNoChange(b *testing.B) {
	c, err := cache.Open(filepath.Join(b.TempDir(), "c.ccdb"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	k := make([]byte, 104)
	v := make([]byte, 48)
	for i := 0; i < 1000; i++ {
		binary.LittleEndian.PutUint32(k[88:], uint32(i))
		c.Insert(k, v)
	}
	binary.LittleEndian.PutUint32(k[88:], 1<<30)
	dst := make([]byte, 48)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, found, _ := c.Find(k, dst); found {
			b.Fatal("hit")
		}
	}
}

// BenchmarkPeerInsertVisible measures how long a miss takes when another
// handle has just appended one entry: read the new tail and answer.
func BenchmarkPeerInsertVisible(b *testing.B) {
	path := filepath.Join(b.TempDir(), "c.ccdb")
	w, _ := cache.Open(path, &cache.Options{CompactJournal: 1 << 40})
	r, _ := cache.Open(path, nil)
	defer w.Close()
	defer r.Close()
	k := make([]byte, 104)
	v := make([]byte, 48)
	dst := make([]byte, 48)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		binary.LittleEndian.PutUint32(k[88:], uint32(i))
		w.Insert(k, v)
		b.StartTimer()
		if _, found, _ := r.Find(k, dst); !found {
			b.Fatal("miss")
		}
	}
}
