package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/convcache/convcache/internal/format"
)

// sample is a small file built frame by frame, so the test knows which
// bytes hold which entries.
type sample struct {
	data    []byte
	entries []sampleEntry
}

type sampleEntry struct {
	key, value []byte
	start, end int // the frame that holds it
}

const sampleScope = "fuzz-scope"

func buildSample() sample {
	var s sample
	h := xxhash.Sum64String(sampleScope)
	s.data = format.EncodeHeader(time.Unix(1700000000, 0), 0)
	var recs []format.Record
	for i := 0; i < 6; i++ {
		recs = append(recs, format.Record{Key: []byte(fmt.Sprintf("snap-key-%d", i)), Value: []byte(fmt.Sprintf("snap-value-%d", i)), Inserted: 1, Used: 2})
	}
	start := len(s.data)
	s.data, _, _ = format.AppendSnapshotFrames(s.data, h, sampleScope, recs, nil)
	for _, r := range recs {
		s.entries = append(s.entries, sampleEntry{r.Key, r.Value, start, len(s.data)})
	}
	// Another scope's chunk, never visible to sampleScope.
	s.data, _, _ = format.AppendSnapshotFrames(s.data, 99, "other", []format.Record{{Key: []byte("other-key"), Value: []byte("other-value"), Inserted: 1, Used: 1}}, nil)
	s.data = format.AppendScopeFrame(s.data, h, sampleScope)
	for i := 0; i < 8; i++ {
		start := len(s.data)
		k, v := []byte(fmt.Sprintf("journal-key-%d", i)), []byte(fmt.Sprintf("journal-value-%d-%s", i, bytes.Repeat([]byte{'x'}, i*7)))
		s.data = format.AppendPutFrame(s.data, h, int64(i), k, v)
		s.entries = append(s.entries, sampleEntry{k, v, start, len(s.data)})
	}
	s.data = format.AppendPutFrame(s.data, 99, 0, []byte("journal-other"), []byte("x"))
	return s
}

// check opens data read-only and verifies the guarantees: no panic; no
// value that is not exactly the one written; every entry whose frame lies
// outside damaged [lo, hi) is present.
func (s sample) check(t *testing.T, path string, data []byte, lo, hi int) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Open(path, &Options{Scope: sampleScope, Mode: ModeReadOnly})
	if err != nil {
		if lo < format.HeaderSize && (errors.Is(err, ErrFormat) || errors.Is(err, ErrCorrupt)) {
			return // a damaged header is refused, and the file left alone
		}
		t.Fatalf("damage at [%d,%d): open: %v", lo, hi, err)
	}
	defer c.Close()
	for _, e := range s.entries {
		v, ok, err := c.Get(e.key)
		if err != nil {
			t.Fatalf("damage at [%d,%d): %v", lo, hi, err)
		}
		if ok && !bytes.Equal(v, e.value) {
			t.Fatalf("damage at [%d,%d): %q returned %q", lo, hi, e.key, v)
		}
		intact := e.end <= lo || e.start >= hi
		if intact && !ok {
			t.Fatalf("damage at [%d,%d): intact entry %q (bytes %d-%d) lost", lo, hi, e.key, e.start, e.end)
		}
	}
	for _, k := range []string{"other-key", "journal-other", "snap-key-6"} {
		if _, ok, _ := c.Get([]byte(k)); ok {
			t.Fatalf("damage at [%d,%d): %q returned", lo, hi, k)
		}
	}
}

// Flip bytes at every offset: never a panic, never a value whose record does
// not check out, and every intact record kept.
func TestFlipEveryByte(t *testing.T) {
	s := buildSample()
	path := filepath.Join(t.TempDir(), "flip.ccdb")
	for _, mask := range []byte{0x01, 0x80, 0xFF} {
		for i := range s.data {
			d := bytes.Clone(s.data)
			d[i] ^= mask
			s.check(t, path, d, i, i+1)
		}
	}
	t.Logf("%d bytes x 3 masks checked", len(s.data))
}

// Truncate at every length: records wholly before the cut survive.
func TestTruncateEveryLength(t *testing.T) {
	s := buildSample()
	path := filepath.Join(t.TempDir(), "trunc.ccdb")
	for n := 0; n <= len(s.data); n++ {
		s.check(t, path, s.data[:n], n, len(s.data)+1)
	}
}

// A damaged file stays usable for writing: a writer appends past the damage
// and a compaction repairs it, keeping every intact entry, and the damaged
// bytes beside the file.
func TestWriteAfterDamage(t *testing.T) {
	s := buildSample()
	dir := t.TempDir()
	for i := format.HeaderSize; i < len(s.data); i += 7 {
		path := filepath.Join(dir, fmt.Sprintf("w%d.ccdb", i))
		d := bytes.Clone(s.data)
		d[i] ^= 0x55
		os.WriteFile(path, d, 0o600)
		c, err := Open(path, &Options{Scope: sampleScope, CompactJournal: 1, Warn: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Insert([]byte("new-key"), []byte("new-value")); err != nil {
			t.Fatal(err)
		}
		if err := c.Save(); err != nil {
			t.Fatal(err)
		}
		c.Close()
		s2 := s
		s2.entries = append(append([]sampleEntry(nil), s.entries...), sampleEntry{[]byte("new-key"), []byte("new-value"), len(d), len(d)})
		data, _ := os.ReadFile(path)
		// After compaction every surviving entry is intact, and the damage
		// it dropped is kept beside the file, at its offset.
		kept, _ := filepath.Glob(path + ".damaged-*")
		if len(kept) != 1 {
			t.Fatalf("flip at %d: %q kept", i, kept)
		}
		if saved, _ := os.ReadFile(kept[0]); len(saved) <= i || saved[i] != d[i] {
			t.Fatalf("flip at %d: %s does not hold the damaged byte", i, kept[0])
		}
		s2.check(t, path, data, i, i+1)
		os.Remove(path)
		os.Remove(kept[0])
	}
}

// Fuzz the loader: whatever the file holds, opening it never panics, and the
// handle returns exactly what an independent decode of the file finds.
func FuzzLoadFile(f *testing.F) {
	s := buildSample()
	f.Add(s.data)
	f.Add(s.data[:format.HeaderSize])
	f.Add(append(bytes.Clone(s.data), "trailing garbage"...))
	f.Add(indexedSample())
	for _, b := range hostileSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.ccdb") // per input: see FuzzOpenPath
		os.WriteFile(path, data, 0o600)
		c, err := Open(path, &Options{Scope: sampleScope, Mode: ModeReadOnly})
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		defer c.Close()
		h := xxhash.Sum64String(sampleScope)
		want := format.ReadContentsOf(data, h) // another scope's chunks cost the handle nothing
		n := 0
		want.Each(func(e *format.Merged) {
			if e.Scope != h {
				return
			}
			n++
			v, ok, err := c.Get(e.Key)
			if err != nil || !ok || !bytes.Equal(v, e.Value) {
				t.Fatalf("key %q: %q %v %v, want %q", e.Key, v, ok, err, e.Value)
			}
		})
		if st := c.Stats(); st.Entries != n {
			t.Fatalf("%d entries in the handle, %d decoded", st.Entries, n)
		}
	})
}
