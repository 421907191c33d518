package cache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

func get(ix *index, key []byte, h uint64) ([]byte, bool) {
	c, off, ok := ix.lookup(key, h)
	if !ok {
		return nil, false
	}
	return entryValue(c, off), true
}

// Keys whose hashes collide completely are still told apart by their bytes.
// (The table is sized so that it never grows: growth rehashes with the real
// hash function.)
func TestIndexCollisions(t *testing.T) {
	ix := newIndex(1000)
	const h = 0xDEADBEEF00C0FFEE
	for i := 0; i < 100; i++ {
		ix.put([]byte(fmt.Sprint("k", i)), []byte(fmt.Sprint("v", i)), h, 0, 0)
	}
	for i := 0; i < 100; i++ {
		v, ok := get(ix, []byte(fmt.Sprint("k", i)), h)
		if !ok || string(v) != fmt.Sprint("v", i) {
			t.Fatalf("k%d: %q %v", i, v, ok)
		}
	}
	if _, ok := get(ix, []byte("k100"), h); ok {
		t.Fatal("found a key never inserted")
	}
}

func TestIndexGrowReplace(t *testing.T) {
	ix := newIndex(0)
	const n = 100000
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprint("key", i))
		ix.put(k, []byte(fmt.Sprint("a", i)), keyHash(k), 0, 0)
	}
	for i := 0; i < n; i += 3 {
		k := []byte(fmt.Sprint("key", i))
		if !ix.put(k, []byte(fmt.Sprint("bb", i)), keyHash(k), 0, 0) {
			t.Fatal("replace reported no change")
		}
		if ix.put(k, []byte(fmt.Sprint("bb", i)), keyHash(k), 0, 0) {
			t.Fatal("identical put reported a change")
		}
	}
	if ix.n != n {
		t.Fatalf("n = %d", ix.n)
	}
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprint("key", i))
		want := fmt.Sprint("a", i)
		if i%3 == 0 {
			want = fmt.Sprint("bb", i)
		}
		if v, ok := get(ix, k, keyHash(k)); !ok || string(v) != want {
			t.Fatalf("%s: %q %v", k, v, ok)
		}
	}
	big := bytes.Repeat([]byte{7}, MaxValueSize)
	ix.put([]byte("big"), big, 1, 0, 0)
	if v, ok := get(ix, []byte("big"), 1); !ok || !bytes.Equal(v, big) {
		t.Fatal("largest value")
	}
}

// Readers see either the old or the new value of a key, whole, while a
// writer inserts, replaces and grows the table. Run with -race.
func TestIndexConcurrentReaders(t *testing.T) {
	ix := newIndex(0)
	const keys = 20000
	val := func(k, ver uint32) []byte {
		b := make([]byte, 48)
		for i := 0; i < 48; i += 8 {
			binary.LittleEndian.PutUint32(b[i:], k)
			binary.LittleEndian.PutUint32(b[i+4:], ver)
		}
		return b
	}
	key := func(k uint32) []byte { return []byte(fmt.Sprintf("key-%08d", k)) }
	var stop atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Int64
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for i := uint32(r); !stop.Load(); i = (i*1103515245 + 12345) % keys {
				k := key(i)
				v, ok := get(ix, k, keyHash(k))
				if !ok {
					continue
				}
				ver := binary.LittleEndian.Uint32(v[4:])
				if !bytes.Equal(v, val(i, ver)) {
					bad.Add(1)
				}
			}
		}(r)
	}
	for ver := uint32(0); ver < 3; ver++ {
		for i := uint32(0); i < keys; i++ {
			k := key(i)
			ix.put(k, val(i, ver), keyHash(k), 0, 0)
		}
	}
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d torn or wrong values", bad.Load())
	}
}
