package cache

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/convcache/convcache/internal/cachefile"
	"github.com/convcache/convcache/internal/format"
	"github.com/convcache/convcache/internal/hostile"
)

// Fuzz targets over the whole open path: whatever a file holds, the library
// and the tools neither crash nor return a value that is not in the file,
// and a compaction leaves an honest file. Seeds: the sample file and a
// small build of every hostile class.

// hostileSeeds returns a small build of every hostile class, in the sample
// file's scope.
func hostileSeeds() [][]byte {
	var out [][]byte
	for _, c := range hostile.Classes() {
		out = append(out, c.Build(min(c.Size, 4<<10), sampleScope))
	}
	return out
}

// indexedSample is the sample file as compaction writes it: the snapshot
// index, the chunks, then the sample's journal, so that a handle opens it
// lazily.
func indexedSample() []byte {
	data := buildSample().data
	img := format.ReadContents(data, 0).Encode(time.Unix(1700000000, 0))
	end := int64(format.HeaderSize)
	format.Scan(data[format.HeaderSize:], format.HeaderSize, true, func(f format.Frame) {
		if format.ExtendsSnapshot(f, end) {
			end = f.End()
		} else {
			img = append(img, data[f.Off:f.End()]...)
		}
	}, nil)
	return img
}

func addSeeds(f *testing.F) {
	s := buildSample()
	f.Add(s.data)
	f.Add(s.data[:format.HeaderSize])
	f.Add(indexedSample())
	for _, b := range hostileSeeds() {
		f.Add(b)
	}
}

// FuzzOpenPath writes the bytes to a file and runs Open, Find, Insert,
// Save (compacting), Load and Close on it.
func FuzzOpenPath(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		// A directory per input: a fuzz worker is killed when fuzzing
		// stops, and would leave one shared directory behind.
		path := filepath.Join(t.TempDir(), "open.ccdb")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Open(path, &Options{Scope: sampleScope, CompactJournal: 1, Warn: io.Discard})
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open: %v", err)
			}
			return
		}
		defer c.Close()
		// What the handle returns must be what a decode of the file holds.
		h := cachefile.ScopeHash(sampleScope)
		want := format.ReadContentsOf(data, h) // another scope's chunks cost the handle nothing
		for _, k := range [][]byte{[]byte("snap-key-1"), []byte("journal-key-3"), []byte("before"), []byte("k")} {
			v, ok, err := c.Get(k)
			if err != nil {
				t.Fatalf("find %q: %v", k, err)
			}
			if ok {
				e := want.Find(h, xxhash.Sum64(k), k)
				if e == nil || !bytes.Equal(e.Value, v) {
					t.Fatalf("find %q: %q, not what the file holds", k, v)
				}
			}
		}
		if err := c.Insert([]byte("fuzz-inserted"), []byte("fuzz-value")); err != nil {
			t.Fatalf("insert: %v", err)
		}
		// Make the journal due whatever the snapshot claims, then save:
		// the save compacts.
		c.mu.Lock()
		c.snapEntries = 0
		c.mu.Unlock()
		if err := c.Save(); err != nil {
			t.Fatalf("save: %v", err)
		}
		if err := c.Load(); err != nil {
			t.Fatalf("load: %v", err)
		}
		if v, ok, err := c.Get([]byte("fuzz-inserted")); !ok || err != nil || string(v) != "fuzz-value" {
			t.Fatalf("after save: %q %v %v", v, ok, err)
		}
		if c.Stats().Compactions == 0 {
			t.Fatalf("no compaction")
		}
		file, err := cachefile.ReadFile(path)
		if err != nil || len(file.Damage) != 0 {
			t.Fatalf("after compaction: %v, damage %+v", err, file.Damage)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	})
}

// FuzzReadFile runs the tools' path: DecodeFile, Entries, Scopes, and a
// re-encoding that must read back the same entries without damage.
func FuzzReadFile(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := cachefile.DecodeFile("fuzz", data)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode: %v", err)
			}
			return
		}
		if file.BudgetLeft() < 0 {
			t.Fatalf("decoded past the budget: %d", file.BudgetLeft())
		}
		entries := file.Entries()
		n := 0
		for _, s := range file.Scopes() {
			n += s.Entries
		}
		if n != len(entries) {
			t.Fatalf("scopes count %d entries, Entries returns %d", n, len(entries))
		}
		again, err := cachefile.DecodeFile("again", cachefile.EncodeFile(entries, file.Created))
		if err != nil || len(again.Damage) != 0 {
			t.Fatalf("re-encoded: %v, damage %+v", err, again.Damage)
		}
		got := again.Entries()
		if len(got) != len(entries) {
			t.Fatalf("re-encoded: %d entries, want %d", len(got), len(entries))
		}
		for i := range got {
			a, b := got[i], entries[i]
			if a.ScopeHash != b.ScopeHash || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) {
				t.Fatalf("re-encoded entry %d differs", i)
			}
		}
		if !slices.IsSortedFunc(entries, func(a, b cachefile.Entry) int {
			if a.Scope != b.Scope || a.ScopeHash != b.ScopeHash {
				return 0
			}
			return bytes.Compare(a.Key, b.Key)
		}) {
			t.Fatalf("entries not sorted by key within a scope")
		}
	})
}
