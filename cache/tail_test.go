package cache

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/internal/format"
)

// Damage at the end of a file is not a torn tail (issue 22): a writer cuts
// off only the start of a journal record that an append left short. Bit rot
// in the last snapshot chunk, in the last chunk of a file without an index,
// or in the last record of the journal is damage: counted, kept in the
// file by every handle, read-write ones included, and kept beside it when a
// compaction drops it.

// oldImage is a compacted file as versions before the snapshot index wrote
// one: the header and lazyScope's chunks, nothing else.
func oldImage(n int) []byte {
	var recs []format.Record
	for i := 0; i < n; i++ {
		recs = append(recs, format.Record{Key: lkey(i), Value: lval(i, 0), Inserted: 1700000000000, Used: 1700000000000})
	}
	img := format.EncodeHeader(time.Unix(1700000000, 0), format.HeaderCompacted)
	img, _, _ = format.AppendSnapshotFrames(img, format.ScopeHash(lazyScope), lazyScope, recs, nil)
	return img
}

// unpaddedImage is a compacted file as compaction writes it, without
// padding (its values compress as benchmark results do): the index, then
// lazyScope's chunks and one other scope's, the last chunk last in the file.
func unpaddedImage(t *testing.T, n int) []byte {
	t.Helper()
	all := format.NewContents(1<<30, n)
	h := format.ScopeHash(lazyScope)
	all.Names[h] = lazyScope
	for i := 0; i < n; i++ {
		all.Put(h, format.Record{Key: lkey(i), Value: []byte(fmt.Sprintf("value-%d-%x", i, uint32(i)*2654435761)), Inserted: 1700000000000, Used: 1700000000000})
	}
	s := otherScopes()[0]
	all.Names[format.ScopeHash(s)] = s
	all.Put(format.ScopeHash(s), format.Record{Key: okey(0), Value: []byte("other scope"), Inserted: 1, Used: 1})
	img := all.Encode(time.Unix(1700000000, 0))
	x := indexOf(t, img)
	if last := x.Chunks[len(x.Chunks)-1]; last.Off+last.Len != int64(len(img)) || last.Scope != h || len(x.Chunks) < 3 {
		t.Fatalf("%d chunks; the last is not lazyScope's, or not last in the file", len(x.Chunks))
	}
	return img
}

// lastFrame returns the offset of the last frame of img.
func lastFrame(t *testing.T, img []byte) int64 {
	t.Helper()
	last := int64(-1)
	format.Scan(img[format.HeaderSize:], format.HeaderSize, true, func(f format.Frame) { last = f.Off }, nil)
	if last < 0 {
		t.Fatal("no frame")
	}
	return last
}

func TestDamageAtTheEndIsKept(t *testing.T) {
	indexed := unpaddedImage(t, 2500)
	x := indexOf(t, indexed)
	padded := lazyImage(2500)
	px := indexOf(t, padded)
	run := px.Run(format.ScopeHash(lazyScope))
	journal := lazyImageWithJournal(2500, 400)
	old := oldImage(2500)
	cases := []struct {
		name string
		img  []byte
		off  int64 // a byte of the damaged frame
	}{
		{"the last chunk of a compacted file", indexed, int64(len(indexed)) - 60},
		{"the length of the last chunk of a compacted file", indexed, x.Chunks[len(x.Chunks)-1].Off + 10},
		{"a chunk followed by padding", padded, run[len(run)-1].Off + run[len(run)-1].Len - 60},
		{"the last chunk of a file without an index", old, int64(len(old)) - 60},
		{"the last record of the journal", journal, int64(len(journal)) - 3},
		{"the length of the journal's last record", journal, lastFrame(t, journal) + 9},
		{"the length of the last chunk", old, lastFrame(t, old) + 10},
	}
	for _, cs := range cases {
		t.Run(strings.ReplaceAll(cs.name, " ", "_"), func(t *testing.T) {
			d := bytes.Clone(cs.img)
			d[cs.off] ^= 0x02
			path := writeFile(t, d)
			want := format.ReadContentsOf(d, format.ScopeHash(lazyScope))
			if len(want.Damaged) != 1 {
				t.Fatalf("a full read: damage %+v", want.Damaged)
			}
			c := openLazyScope(t, path, Options{CompactJournal: 1 << 40})
			var probe [][]byte
			for i := 0; i < 2500; i += 3 {
				probe = append(probe, lkey(i))
			}
			wantFullLoad(t, c, d, probe)
			mustInsertOK(t, c, []byte("after the damage"), []byte("kept"))
			if st := c.Stats(); st.DamagedBytes != uint64(want.Damaged[0].Len) {
				t.Fatalf("damaged_bytes %d, want %d", st.DamagedBytes, want.Damaged[0].Len)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(path)
			if !bytes.HasPrefix(after, d) {
				t.Fatalf("the writer cut the file to %d bytes (was %d)", len(after), len(d))
			}
			r := openLazyScope(t, path, Options{Mode: ModeReadOnly})
			mustValue(t, r, []byte("after the damage"), []byte("kept"))
			wantFullLoad(t, r, after, probe)
		})
	}
}

// damagedCopies lists the files of damaged bytes kept beside path, oldest
// first (vfs.DamagedFiles; the test looks for itself).
func damagedCopies(t *testing.T, path string) []string {
	t.Helper()
	names, err := filepath.Glob(path + ".damaged-*")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// A compaction drops damage only once it has kept its bytes beside the
// file, at their offsets, and keeps the newest three such files.
func TestCompactionKeepsDamagedBytes(t *testing.T) {
	img := lazyImageWithJournal(2500, 400)
	x := indexOf(t, img)
	path := filepath.Join(t.TempDir(), "c.ccdb")
	for round := 0; round < 5; round++ {
		ch := x.Chunks[round%len(x.Chunks)]
		d := bytes.Clone(img)
		d[ch.Off+ch.Len/2] ^= 0x40
		if err := os.WriteFile(path, d, 0o600); err != nil {
			t.Fatal(err)
		}
		var warn strings.Builder
		c := openLazyScope(t, path, Options{CompactJournal: 1, Warn: &warn})
		c.Stats() // read the file whole: the compaction below needs its counts
		c.mu.Lock()
		c.snapEntries = 0 // make the journal due for compaction
		c.mu.Unlock()
		mustInsertOK(t, c, []byte(fmt.Sprint("round ", round)), []byte("v"))
		if err := c.Save(); err != nil {
			t.Fatal(err)
		}
		kept := damagedCopies(t, path)
		if len(kept) != min(round+1, 3) || !strings.Contains(warn.String(), "kept in "+kept[len(kept)-1]) {
			t.Fatalf("round %d: kept %q; warned %q", round, kept, warn.String())
		}
		saved, _ := os.ReadFile(kept[len(kept)-1])
		if int64(len(saved)) != ch.Off+ch.Len || !bytes.Equal(saved[ch.Off:], d[ch.Off:ch.Off+ch.Len]) {
			t.Fatalf("round %d: %d bytes kept, not chunk [%d,%d)", round, len(saved), ch.Off, ch.Off+ch.Len)
		}
		if fi, _ := os.Stat(kept[len(kept)-1]); fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v", fi.Mode())
		}
		if now, _ := os.ReadFile(path); len(format.ReadContents(now, 0).Damaged) != 0 {
			t.Fatalf("round %d: the compacted file has damage", round)
		}
		c.Close()
	}
}
