package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/convcache/convcache/internal/vfs"
)

// faultFS is the real file system with a budget of bytes that may still be
// written; past it, writes are cut short and fail with ENOSPC, as on a full
// disk.
type faultFS struct {
	vfs.OS
	mu     sync.Mutex
	budget int64 // < 0: unlimited
}

type faultFile struct {
	*os.File
	fs *faultFS
}

func (f *faultFS) setBudget(n int64) {
	f.mu.Lock()
	f.budget = n
	f.mu.Unlock()
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	osf, err := os.OpenFile(name, flag|syscall.O_CLOEXEC, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{osf, f}, nil
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	allow := int64(len(p))
	if f.fs.budget >= 0 {
		allow = min(allow, f.fs.budget)
		f.fs.budget -= allow
	}
	f.fs.mu.Unlock()
	n, err := f.File.Write(p[:allow])
	if err == nil && n < len(p) {
		err = &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return n, err
}

func fkey(i int) []byte { return []byte(fmt.Sprintf("key-%06d-%s", i, strings.Repeat("k", 90))) }
func fval(i int) []byte { return []byte(fmt.Sprintf("value-%06d-%s", i, strings.Repeat("v", 36))) }

// A full disk leaves the existing file intact and readable, gives
// ErrNoSpace, keeps the entry in memory, and writes it once space is back.
func TestNoSpace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.ccdb")
	ffs := &faultFS{budget: -1}
	c, err := Open(path, &Options{fs: ffs, CompactJournal: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 100; i++ {
		if err := c.Insert(fkey(i), fval(i)); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := os.ReadFile(path)
	ffs.setBudget(100) // less than one record
	err = c.Insert(fkey(100), fval(100))
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), path) {
		t.Fatalf("insert on a full disk: %v", err)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(before) {
		t.Fatalf("file changed on a failed append: %d -> %d bytes", len(before), len(after))
	}
	if v, ok, _ := c.Get(fkey(100)); !ok || string(v) != string(fval(100)) {
		t.Fatal("entry not kept in memory")
	}
	// Compaction on a full disk: the old file stays, no temp file is left.
	ffs.setBudget(0)
	c.opts.CompactJournal = 1
	if err := c.Save(); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("save on a full disk: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(before) {
		t.Fatal("file changed by a failed compaction")
	}
	if tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp-*")); len(tmps) != 0 {
		t.Fatalf("temporary files left: %v", tmps)
	}
	// A fresh reader sees every entry written before the disk filled, and no damage.
	r, err := Open(path, &Options{Mode: ModeReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if v, ok, _ := r.Get(fkey(i)); !ok || string(v) != string(fval(i)) {
			t.Fatalf("entry %d lost", i)
		}
	}
	if r.Stats().DamagedBytes != 0 {
		t.Fatal("a failed append left a torn record")
	}
	r.Close()
	// Space is back: the kept entry is written.
	ffs.setBudget(-1)
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	r, _ = Open(path, nil)
	defer r.Close()
	for i := 0; i <= 100; i++ {
		if v, ok, _ := r.Get(fkey(i)); !ok || string(v) != string(fval(i)) {
			t.Fatalf("entry %d missing after space came back", i)
		}
	}
}

// The same on a real, small tmpfs (needs mount permission; the fault
// injection above covers the logic everywhere).
func TestNoSpaceTmpfs(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v); TestNoSpace covers this with fault injection", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	path := filepath.Join(dir, "c.ccdb")
	c, err := Open(path, &Options{CompactJournal: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	for ; n < 100000; n++ {
		err = c.Insert(fkey(n), fval(n))
		if err != nil {
			break
		}
	}
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("after %d inserts: %v", n, err)
	}
	r, err := Open(path, &Options{Mode: ModeReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; i < n; i++ {
		if v, ok, _ := r.Get(fkey(i)); !ok || string(v) != string(fval(i)) {
			t.Fatalf("entry %d of %d lost", i, n)
		}
	}
	if r.Stats().DamagedBytes != 0 {
		t.Fatal("torn record left on a full disk")
	}
	t.Logf("disk full after %d inserts; every one of them readable", n)
}
