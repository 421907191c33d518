package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
	"github.com/convcache/convcache/internal/format"
)

// Bit rot in the snapshot is damage wherever it falls: a compacted file is
// written whole and synced before it is renamed into place, so nothing in
// it is ever an append cut short (issue 22, point 7).

func rotKey(i int) []byte { return []byte(fmt.Sprintf("key-%08d", i)) }
func rotValue(i int) []byte {
	return []byte(fmt.Sprintf("value-%d-%x", i, uint32(i)*2654435761)) // compresses as benchmark results do: no padding
}

// rotCache writes n entries of scope gpuA, compacted by convcache compact,
// and returns the file's path, its bytes and its snapshot index.
func rotCache(t *testing.T, n int) (string, []byte, format.SnapshotIndex) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.ccdb")
	now := time.Now()
	var es []cachefile.Entry
	for i := 0; i < n; i++ {
		es = append(es, entry(gpuA, rotKey(i), rotValue(i), now, now))
	}
	writeFile(t, path, es...)
	mustRun(t, exitOK, nil, "compact", path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fr, ok := format.ParseFrame(data[format.HeaderSize:format.HeaderSize+format.FrameLen(data[format.HeaderSize:])], format.HeaderSize)
	x, ok2 := format.DecodeSnapshotIndex(fr, int64(len(data)))
	if !ok || !ok2 || x.End != int64(len(data)) {
		t.Fatalf("compacted file without a usable index, or with a journal or padding: %v %v %d/%d", ok, ok2, x.End, len(data))
	}
	return path, data, x
}

// damagedCopies lists the files of damaged bytes kept beside path, oldest
// first (as cachefile.DamagedFiles does; the tests look for themselves).
func damagedCopies(t *testing.T, path string) []string {
	t.Helper()
	names, err := filepath.Glob(path + ".damaged-*")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// flipAt flips one bit of the file at path, at off, and returns its bytes.
func flipAt(t *testing.T, path string, data []byte, off int) []byte {
	t.Helper()
	d := bytes.Clone(data)
	d[off] ^= 0x01
	if err := os.WriteFile(path, d, 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// chunkOf returns the index of the chunk that holds file offset off.
func chunkOf(x format.SnapshotIndex, off int64) int {
	for i, ch := range x.Chunks {
		if off >= ch.Off && off < ch.Off+ch.Len {
			return i
		}
	}
	return -1
}

// The reproduction: 20,000 entries, compact, one bit flipped 60 bytes
// before the end (in the last chunk). verify exits 1 and names the
// corrupt record, stats reports it, a read-write handle serves every other
// chunk's entries and truncates nothing, and compact keeps the damaged
// bytes beside the file.
func TestBitRotInLastChunkIsDamage(t *testing.T) {
	path, data, x := rotCache(t, 20000)
	off := len(data) - 60
	last := len(x.Chunks) - 1
	if chunkOf(x, int64(off)) != last || last < 2 {
		t.Fatalf("offset %d is not in the last of %d chunks", off, len(x.Chunks))
	}
	d := flipAt(t, path, data, off)

	v := verify(t, exitDamage, path)
	lost := int(x.Chunks[last].Count)
	if v.OK || v.TornTail != nil || len(v.Corrupt) != 1 || v.Corrupt[0].Offset != x.Chunks[last].Off || v.Entries != 20000-lost {
		t.Fatalf("verify: %+v (last chunk at %d, %d entries)", v, x.Chunks[last].Off, lost)
	}
	r := mustRun(t, exitDamage, nil, "verify", path)
	if strings.Contains(r.stdout, "torn tail") || !strings.Contains(r.stdout, fmt.Sprintf("corrupt record at offset %d", x.Chunks[last].Off)) ||
		!strings.Contains(r.stdout, "FAILED") {
		t.Fatalf("verify:\n%s", r.stdout)
	}
	r = mustRun(t, exitOK, nil, "stats", path)
	if !regexp.MustCompile(`(?m)^damage +1 corrupt record\(s\)`).MatchString(r.stdout) || strings.Contains(r.stdout, "torn tail") {
		t.Fatalf("stats:\n%s", r.stdout)
	}

	// A read-write handle: every entry of the other chunks, none of the
	// damaged one, and the file is not cut (its close appends the use
	// record after the damage).
	c, err := cache.Open(path, &cache.Options{Scope: gpuA, Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	first := 20000 - lost
	for i := 0; i < 20000; i += 7 {
		got, ok, err := c.Get(rotKey(i))
		if err != nil || ok != (i < first) || (ok && !bytes.Equal(got, rotValue(i))) {
			t.Fatalf("key %d: %q %v %v (the damaged chunk holds keys %d and up)", i, got, ok, err, first)
		}
	}
	if st := c.Stats(); st.DamagedBytes != uint64(x.Chunks[last].Len) {
		t.Fatalf("damaged_bytes %d, want %d", st.DamagedBytes, x.Chunks[last].Len)
	}
	if err := c.Insert([]byte("new-key"), []byte("new-value")); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, d) {
		t.Fatalf("the writer cut the file: %d bytes, were %d", len(after), len(d))
	}

	// compact drops the damage and keeps its bytes beside the file.
	r = mustRun(t, exitOK, nil, "compact", path)
	kept := damagedCopies(t, path)
	if len(kept) != 1 || !strings.Contains(r.stdout, "dropped "+bytesText(x.Chunks[last].Len)+" of damaged records (kept in "+kept[0]+")") {
		t.Fatalf("compact: %q, kept %q", r.stdout, kept)
	}
	saved, _ := os.ReadFile(kept[0])
	if int64(len(saved)) != x.Chunks[last].Off+x.Chunks[last].Len || !bytes.Equal(saved[x.Chunks[last].Off:], d[x.Chunks[last].Off:]) ||
		!bytes.Equal(saved[:x.Chunks[last].Off], make([]byte, x.Chunks[last].Off)) {
		t.Fatalf("%s: %d bytes, not the damaged chunk at its offset", kept[0], len(saved))
	}
	if v := verify(t, exitOK, path); v.Entries != first+1 {
		t.Fatalf("after compact: %+v", v)
	}
}

// One chunk (500 entries), its bit flipped: the first read-write handle
// truncated the file to its index, losing every entry silently. Now it
// reads what it can, keeps the file, and verify reports the damage.
func TestBitRotInOnlyChunkIsNotTruncated(t *testing.T) {
	path, data, x := rotCache(t, 500)
	if len(x.Chunks) != 1 || chunkOf(x, int64(len(data)-60)) != 0 {
		t.Fatalf("%d chunks", len(x.Chunks))
	}
	d := flipAt(t, path, data, len(data)-60)
	c, err := cache.Open(path, &cache.Options{Scope: gpuA, Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Get(rotKey(1)); ok || err != nil {
		t.Fatalf("a key of the damaged chunk: %v %v", ok, err)
	}
	if err := c.Insert([]byte("new-key"), []byte("new-value")); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, d) {
		t.Fatalf("the writer cut the file to %d bytes (was %d)", len(after), len(d))
	}
	v := verify(t, exitDamage, path)
	if len(v.Corrupt) != 1 || v.Corrupt[0].Offset != x.Chunks[0].Off || v.Corrupt[0].Length != x.Chunks[0].Len || v.Entries != 1 {
		t.Fatalf("verify: %+v", v)
	}
}

// compact keeps the newest three files of damaged bytes, private as the
// cache file is.
func TestCompactKeepsDamagedBytes(t *testing.T) {
	path, data, x := rotCache(t, 500)
	var kept []string
	for round := 0; round < 5; round++ {
		flipAt(t, path, data, int(x.Chunks[0].Off)+100+round)
		mustRun(t, exitOK, nil, "compact", path)
		now := damagedCopies(t, path)
		if len(now) != min(round+1, 3) || (len(kept) > 0 && now[len(now)-1] <= kept[len(kept)-1]) {
			t.Fatalf("round %d: %q after %q", round, now, kept)
		}
		if fi, err := os.Lstat(now[len(now)-1]); err != nil || fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
			t.Fatalf("%s: %v %v", now[len(now)-1], fi.Mode(), err)
		}
		kept = now
	}
}
