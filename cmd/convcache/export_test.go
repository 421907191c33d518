package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
)

func TestExport(t *testing.T) {
	path := sampleCache(t)
	dir := t.TempDir()
	bundle := filepath.Join(dir, "h100.ccdb")
	r := mustRun(t, exitOK, nil, "export", path, "--scope", gpuA, "-o", bundle)
	if !strings.Contains(r.stdout, "exported 3 entries of 1 scope(s) from "+path+" to "+bundle) {
		t.Fatalf("stdout %q", r.stdout)
	}
	// A bundle is a compacted cache file: verify and ls read it.
	v := verify(t, exitOK, bundle)
	if v.Entries != 3 || v.Scopes != 1 {
		t.Fatalf("bundle: %+v", v)
	}
	f, _ := cachefile.ReadFile(bundle)
	if f.JournalBytes != 0 || f.SnapshotBytes == 0 {
		t.Fatalf("bundle is not a snapshot: %+v", f)
	}
	for _, e := range ls(t, nil, bundle) {
		if e.Scope != gpuA {
			t.Fatalf("exported another scope: %+v", e)
		}
	}
	// The default cache through CONVCACHE_PATH, every scope.
	all := filepath.Join(dir, "all.ccdb")
	mustRun(t, exitOK, []string{"CONVCACHE_PATH=" + path}, "export", "-o", all)
	if n := len(keys(t, all)); n != 4 {
		t.Fatalf("export of every scope: %d entries", n)
	}

	r = mustRun(t, exitUsage, nil, "export", path, "--scope", "nope", "-o", filepath.Join(dir, "x.ccdb"))
	if !strings.Contains(r.stderr, "no entries of nope") || !strings.Contains(r.stderr, gpuA) {
		t.Fatalf("stderr %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.ccdb")); err == nil {
		t.Fatal("an empty bundle was written")
	}
	mustRun(t, exitUsage, nil, "export", path, "--scope", gpuA, "-o", bundle) // exists
	mustRun(t, exitUsage, nil, "export", path, "--scope", gpuA)               // no -o
}

// Import into a cache that processes are using: an open handle sees the
// imported entries, and entries a writer inserts meanwhile are all kept.
func TestImportLive(t *testing.T) {
	src := sampleCache(t)
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle.ccdb")
	mustRun(t, exitOK, nil, "export", src, "--scope", gpuA, "-o", bundle)

	live := filepath.Join(dir, "live", "cache.ccdb")
	h, err := cache.Open(live, &cache.Options{Scope: gpuA})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// The live cache has a faster value for the fwd key than the bundle.
	fwd := torchKey(v7+"fwd", params(32, 64, 56, 64))
	if err := h.Insert(fwd, perf(0, 0.05)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := h.Get(torchKey(v7+"bwd_data", params(32, 64, 56, 64))); ok {
		t.Fatal("hit before import")
	}

	// A writer inserts while the import runs.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var inserted atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load() || i < 50; i++ {
			err := h.Insert([]byte(fmt.Sprintf("writer/%d", i)), []byte("v"))
			if err != nil && !errors.Is(err, cache.ErrPending) {
				t.Error(err)
				return
			}
			inserted.Store(int64(i + 1))
			time.Sleep(time.Millisecond)
		}
	}()
	var runs []result
	for i := 0; i < 3; i++ {
		runs = append(runs, mustRun(t, exitOK, nil, "import", "--cache", live, bundle))
	}
	stop.Store(true)
	wg.Wait()
	if err := h.Save(); err != nil {
		t.Fatal(err)
	}

	r := runs[0]
	if !strings.Contains(r.stdout, "imported 3 entries into "+live+": 2 new, 0 replaced, 0 unchanged, 1 kept") ||
		!strings.Contains(r.stdout, "because faster measured time (0.05 ms vs 0.12 ms)") {
		t.Fatalf("first import:\n%s", r.stdout)
	}
	if !strings.Contains(runs[2].stdout, "0 new, 0 replaced, 2 unchanged, 1 kept") {
		t.Fatalf("third import:\n%s", runs[2].stdout)
	}
	// The open handle sees the imported entries.
	if v, ok, err := h.Get(torchKey(v7+"bwd_data", params(32, 64, 56, 64))); err != nil || !ok || string(v) != string(perf(0, 0.31)) {
		t.Fatalf("imported entry through the live handle: %v %v", ok, err)
	}
	if v, _, _ := h.Get(fwd); string(v) != string(perf(0, 0.05)) {
		t.Fatal("the faster live value was replaced")
	}
	// Nothing the writer inserted was lost.
	k := keys(t, live)
	n := int(inserted.Load())
	for i := 0; i < n; i++ {
		if !k[fmt.Sprintf("writer/%d", i)] {
			t.Fatalf("writer/%d lost (of %d)", i, n)
		}
	}
	if len(k) != n+3 {
		t.Fatalf("%d keys, want %d", len(k), n+3)
	}
}

func TestImportCreates(t *testing.T) {
	src := sampleCache(t)
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle.ccdb")
	mustRun(t, exitOK, nil, "export", src, "-o", bundle)
	// Into the default cache (CONVCACHE_PATH), which does not exist yet,
	// in a directory that does not exist yet; only one scope.
	live := filepath.Join(dir, "new", "dir", "cache.ccdb")
	r := mustRun(t, exitOK, []string{"CONVCACHE_PATH=" + live}, "import", bundle, "--scope", gpuB)
	if !strings.Contains(r.stdout, "imported 1 entries into "+live+": 1 new") {
		t.Fatalf("stdout %q", r.stdout)
	}
	if k := keys(t, live); len(k) != 1 || !k["opaque-key"] {
		t.Fatalf("keys %v", k)
	}
	if fi, _ := os.Stat(filepath.Dir(live)); fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v", fi.Mode())
	}
	mustRun(t, exitUsage, nil, "import", "--cache", live)
	mustRun(t, exitUsage, nil, "import", "--cache", live, bundle, "--scope", "nope")
	r = mustRun(t, exitIO, nil, "import", "--cache", live, filepath.Join(dir, "missing.ccdb"))
	if !strings.Contains(r.stderr, "missing.ccdb does not exist") {
		t.Fatalf("stderr %q", r.stderr)
	}
	// Into a file that is not a cache: refused, untouched.
	other := filepath.Join(dir, "notes")
	os.WriteFile(other, []byte("precious notes, not a cache"), 0o600)
	mustRun(t, exitIO, nil, "import", "--cache", other, bundle)
	if b, _ := os.ReadFile(other); string(b) != "precious notes, not a cache" {
		t.Fatal("import overwrote a foreign file")
	}
}
