package cache_test

// Benchmarks of the engine through its exported API, over cache sizes and
// goroutine counts. Keys and values have the layouts convcache stores for
// PyTorch: a 104-byte ConvolutionParams and a 48-byte
// cudnnConvolutionFwdAlgoPerf_t (see bench/common.hpp for the full
// generator used by make bench; this is a smaller one with the same layout).
//
//	go test -run '^$' -bench . -benchmem ./cache       (or: make bench-go)
//	go test -run '^$' -bench 'Find/entries=100k' -cpuprofile cpu.prof ./cache
//
// The hit path must not allocate: BenchmarkFind reports 0 allocs/op.

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/convcache/convcache/cache"
)

const (
	benchKeySize   = 104
	benchValueSize = 48
	benchScope     = "cudnn-v1;gpu=NVIDIA H100 80GB HBM3;cc=9.0;sm=132;driver=13000;cudnn=91000;cudart=13000"
)

var (
	benchSizes      = []int{10000, 100000, 1000000}
	benchGoroutines = []int{1, 2}
)

// benchLayers are convolution shapes from ResNet-50 and MobileNetV2:
// in channels, out channels, kernel, stride, padding, groups. No two rows are
// equal, so the keys below are distinct.
var benchLayers = [][6]int32{
	{3, 64, 7, 2, 3, 1}, {64, 64, 1, 1, 0, 1}, {64, 64, 3, 1, 1, 1}, {64, 256, 1, 1, 0, 1},
	{256, 64, 1, 1, 0, 1}, {256, 128, 1, 1, 0, 1}, {128, 128, 3, 2, 1, 1}, {128, 512, 1, 1, 0, 1},
	{256, 512, 1, 2, 0, 1}, {512, 128, 1, 1, 0, 1}, {128, 128, 3, 1, 1, 1}, {512, 256, 1, 1, 0, 1},
	{256, 256, 3, 2, 1, 1}, {256, 1024, 1, 1, 0, 1}, {512, 1024, 1, 2, 0, 1}, {1024, 256, 1, 1, 0, 1},
	{256, 256, 3, 1, 1, 1}, {1024, 512, 1, 1, 0, 1}, {512, 512, 3, 2, 1, 1}, {512, 2048, 1, 1, 0, 1},
	{1024, 2048, 1, 2, 0, 1}, {2048, 512, 1, 1, 0, 1}, {512, 512, 3, 1, 1, 1}, {3, 32, 3, 2, 1, 1},
	{32, 32, 3, 1, 1, 32}, {32, 16, 1, 1, 0, 1}, {16, 96, 1, 1, 0, 1}, {96, 96, 3, 2, 1, 96},
	{96, 24, 1, 1, 0, 1}, {144, 144, 3, 1, 1, 144}, {144, 32, 1, 1, 0, 1}, {192, 192, 3, 1, 1, 192},
}

// benchKey writes key i into k: layer i%32, batch 1..64, resolution 7..262,
// three data types and two memory formats (distinct for i < 3,145,728).
func benchKey(k []byte, i int) {
	clear(k)
	l := benchLayers[i%len(benchLayers)]
	i /= len(benchLayers)
	batch := int32(1 + i%64)
	i /= 64
	hw := int32(7 + i%256)
	i /= 256
	dtype := []int32{0, 2, 9}[i%3] // float, half, bfloat16
	i /= 3
	format := int8(2 * (i % 2)) // contiguous or channels last
	le := binary.LittleEndian
	le.PutUint32(k[4:], uint32(dtype))
	for j, v := range []int32{batch, l[0], hw, hw} {
		le.PutUint32(k[8+4*j:], uint32(v))
	}
	k[28] = 4 // input_dim
	k[29] = byte(format)
	for j, v := range []int32{l[1], l[0] / l[5], l[2], l[2]} {
		le.PutUint32(k[32+4*j:], uint32(v))
	}
	for j := 0; j < 2; j++ {
		le.PutUint32(k[52+4*j:], uint32(l[4])) // padding
		le.PutUint32(k[64+4*j:], uint32(l[3])) // stride
		le.PutUint32(k[76+4*j:], 1)            // dilation
	}
	le.PutUint64(k[88:], uint64(l[5])) // groups
	if dtype == 0 {
		k[97] = 1 // allow_tf32
	}
}

// benchValue writes the benchmark result stored for key i into v.
func benchValue(v []byte, i int) {
	clear(v)
	h := uint64(i+1) * 0x9E3779B97F4A7C15
	le := binary.LittleEndian
	le.PutUint32(v[0:], uint32(h%8))                    // algo
	le.PutUint32(v[8:], uint32(1000+(h>>8)%100000))     // time (as float bits: any value)
	le.PutUint64(v[16:], ((h>>32)%4)*((h>>34)%256)<<20) // memory
	le.PutUint32(v[28:], uint32((h>>45)%3))             // mathType
}

// benchKeys returns keys 0..n-1 in the order finds ask for them (a fixed
// shuffle), laid out one after another in that order: the loop reads the
// keys sequentially, as a caller's key is in its cache, and the random
// access is the cache's own.
func benchKeys(n int) [][]byte {
	buf := make([]byte, n*benchKeySize)
	keys := make([][]byte, n)
	for i, k := range benchOrder(n) {
		keys[i] = buf[i*benchKeySize : (i+1)*benchKeySize : (i+1)*benchKeySize]
		benchKey(keys[i], k)
	}
	return keys
}

// benchOrder is a fixed shuffle of 0..n-1.
func benchOrder(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	s := uint64(0xC0FFEE)
	for i := n - 1; i > 0; i-- {
		s = s*6364136223846793005 + 1442695040888963407
		j := int((s >> 33) % uint64(i+1))
		p[i], p[j] = p[j], p[i]
	}
	return p
}

func benchOpen(b *testing.B, path string, o cache.Options) *cache.Cache {
	b.Helper()
	o.Scope = benchScope
	c, err := cache.Open(path, &o)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// fixtures builds compacted cache files of n entries in one directory, once
// per parent benchmark.
type fixtures struct {
	dir   string
	mu    sync.Mutex
	paths map[int]string
}

func newFixtures(b *testing.B) *fixtures {
	return &fixtures{dir: b.TempDir(), paths: map[int]string{}}
}

// get returns the path of a file holding keys 0..n-1. It is filled with
// compaction deferred, then compacted once, as a long-lived cache would be.
func (f *fixtures) get(b *testing.B, n int) string {
	b.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.paths[n]; ok {
		return p
	}
	p := filepath.Join(f.dir, fmt.Sprintf("fixture-%d.ccdb", n))
	c := benchOpen(b, p, cache.Options{CompactJournal: 1 << 40})
	k := make([]byte, benchKeySize)
	v := make([]byte, benchValueSize)
	for i := 0; i < n; i++ {
		benchKey(k, i)
		benchValue(v, i)
		if err := c.Insert(k, v); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	c = benchOpen(b, p, cache.Options{CompactJournal: 4 << 10})
	if err := c.Save(); err != nil { // compacts: the journal is past 4 KiB
		b.Fatal(err)
	}
	if st := c.Stats(); st.Compactions == 0 {
		b.Fatalf("fixture of %d entries did not compact", n)
	}
	c.Close()
	f.paths[n] = p
	return p
}

func sizeName(n int) string {
	switch {
	case n >= 1000000:
		return fmt.Sprintf("%dM", n/1000000)
	case n >= 1000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// parallel runs b.N calls of op split over g goroutines; worker w starts at
// a different point of the key order. ns/op is then the inverse of the
// aggregate throughput.
func parallel(b *testing.B, g int, op func(w, i int)) {
	var wg sync.WaitGroup
	for w := 0; w < g; w++ {
		n := b.N / g
		if w < b.N%g {
			n++
		}
		wg.Add(1)
		go func(w, n int) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				op(w, i)
			}
		}(w, n)
	}
	wg.Wait()
}

// BenchmarkFind: hits on a loaded file, keys asked in a shuffled order. The
// hit path must not allocate.
func BenchmarkFind(b *testing.B) {
	fx := newFixtures(b)
	for _, n := range benchSizes {
		for _, g := range benchGoroutines {
			b.Run(fmt.Sprintf("entries=%s/goroutines=%d", sizeName(n), g), func(b *testing.B) {
				c := benchOpen(b, fx.get(b, n), cache.Options{})
				defer c.Close()
				keys := benchKeys(n)
				dst := make([][]byte, g)
				for w := range dst {
					dst[w] = make([]byte, benchValueSize)
				}
				b.SetBytes(benchKeySize + benchValueSize)
				b.ReportAllocs()
				b.ResetTimer()
				parallel(b, g, func(w, i int) {
					k := keys[(i+w*n/g)%n]
					if _, ok, err := c.Find(k, dst[w]); !ok || err != nil {
						b.Errorf("find: %v %v", ok, err)
					}
				})
			})
		}
	}
}

// BenchmarkGet: Find plus the copy Get returns (one allocation).
func BenchmarkGet(b *testing.B) {
	fx := newFixtures(b)
	const n = 100000
	c := benchOpen(b, fx.get(b, n), cache.Options{})
	defer c.Close()
	keys := benchKeys(n)
	b.SetBytes(benchKeySize + benchValueSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok, err := c.Get(keys[i%n]); !ok || err != nil {
			b.Fatalf("get: %v %v", ok, err)
		}
	}
}

// BenchmarkFindMiss: a miss checks the file for other processes' appends
// (an fstat when nothing changed).
func BenchmarkFindMiss(b *testing.B) {
	fx := newFixtures(b)
	const n = 100000
	c := benchOpen(b, fx.get(b, n), cache.Options{})
	defer c.Close()
	k := make([]byte, benchKeySize)
	dst := make([]byte, benchValueSize)
	benchKey(k, n+1)
	b.SetBytes(benchKeySize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok, err := c.Find(k, dst); ok || err != nil {
			b.Fatalf("find: %v %v", ok, err)
		}
	}
}

// BenchmarkLoad: open a compacted file of n entries (read, decompress,
// index) and answer one find: a cold start in a warm page cache. SetBytes
// is the raw key+value bytes loaded.
func BenchmarkLoad(b *testing.B) {
	fx := newFixtures(b)
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("entries=%s", sizeName(n)), func(b *testing.B) {
			p := fx.get(b, n)
			k := make([]byte, benchKeySize)
			dst := make([]byte, benchValueSize)
			benchKey(k, n/2)
			b.SetBytes(int64(n) * (benchKeySize + benchValueSize))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c := benchOpen(b, p, cache.Options{})
				if _, ok, err := c.Find(k, dst); !ok || err != nil {
					b.Fatalf("find after open: %v %v", ok, err)
				}
				b.StopTimer()
				c.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkInsert: new keys appended to one file, each durable against a
// killed process when Insert returns (no fsync), with the default
// compaction threshold, by 1 or 2 goroutines sharing the handle.
func BenchmarkInsert(b *testing.B) {
	for _, g := range benchGoroutines {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			c := benchOpen(b, filepath.Join(b.TempDir(), "insert.ccdb"), cache.Options{})
			defer c.Close()
			keys := make([][]byte, g)
			vals := make([][]byte, g)
			for w := range keys {
				keys[w] = make([]byte, benchKeySize)
				vals[w] = make([]byte, benchValueSize)
			}
			b.SetBytes(benchKeySize + benchValueSize)
			b.ReportAllocs()
			b.ResetTimer()
			parallel(b, g, func(w, i int) {
				benchKey(keys[w], i*g+w)
				benchValue(vals[w], i*g+w)
				if err := c.Insert(keys[w], vals[w]); err != nil {
					b.Errorf("insert: %v", err)
				}
			})
		})
	}
}

// BenchmarkSave: one insert then Save, which fsyncs: the cost of making
// each result durable against power loss.
func BenchmarkSave(b *testing.B) {
	c := benchOpen(b, filepath.Join(b.TempDir(), "save.ccdb"), cache.Options{})
	defer c.Close()
	k := make([]byte, benchKeySize)
	v := make([]byte, benchValueSize)
	b.SetBytes(benchKeySize + benchValueSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchKey(k, i)
		benchValue(v, i)
		if err := c.Insert(k, v); err != nil {
			b.Fatal(err)
		}
		if err := c.Save(); err != nil {
			b.Fatal(err)
		}
	}
}
