package cachefile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
	"github.com/convcache/convcache/lock"
)

// Rewriting a cache file that no process has created yet (or an empty one)
// is nothing to do: ErrNoFile, fn never called, nothing created. A
// compactor that starts before the writers is normal in a fleet.
func TestRewriteNoFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.ccdb")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.ccdb")
	if err := os.Symlink(filepath.Join(dir, "gone.ccdb"), dangling); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"missing file":      filepath.Join(dir, "missing.ccdb"),
		"missing directory": filepath.Join(dir, "no", "such", "dir", "cache.ccdb"),
		"empty file":        empty,
		"dangling symlink":  dangling,
	}
	for name, path := range cases {
		called := false
		err := cachefile.Rewrite(path, time.Second, func(in []cachefile.Entry) ([]cachefile.Entry, error) {
			called = true
			return in, nil
		})
		if !errors.Is(err, cachefile.ErrNoFile) || called {
			t.Errorf("%s: err %v, fn called %v; want ErrNoFile, not called", name, err, called)
		}
	}
	// Nothing was created: no cache file, no lock file, no directory.
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 2 {
		t.Errorf("files after the rewrites: %v, want only the two made here", names)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("the empty file was changed: %v %v", fi, err)
	}

	// A file with entries is rewritten as before.
	e := newEnv(t)
	c := e.open(cache.Options{})
	mustInsert(t, c, key(1), val(1, 0))
	n := -1
	err := cachefile.Rewrite(e.path, time.Second, func(in []cachefile.Entry) ([]cachefile.Entry, error) {
		n = len(in)
		return in, nil
	})
	if err != nil || n != 1 {
		t.Fatalf("rewrite of a file with one entry: err %v, fn saw %d entries", err, n)
	}
}

// A file removed while Rewrite waited for the lock is nothing to do too:
// ErrNoFile once the lock is taken, fn never called, nothing created. The
// test holds the lock, waits until Rewrite has opened the lock file (so it
// is past its first look at the file), then removes the file.
func TestRewriteFileRemovedWhileWaiting(t *testing.T) {
	e := newEnv(t)
	c := e.open(cache.Options{})
	mustInsert(t, c, key(1), val(1, 0))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	held, err := lock.New(e.path + ".lock").Lock(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	type result struct {
		err    error
		called bool
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.err = cachefile.Rewrite(e.path, time.Hour, func(in []cachefile.Entry) ([]cachefile.Entry, error) {
			r.called = true
			return in, nil
		})
		done <- r
	}()
	for openCount(t, e.path+".lock") < 2 {
		select {
		case r := <-done:
			t.Fatalf("Rewrite returned while the lock was held: %v", r.err)
		default:
		}
		runtime.Gosched()
	}
	if err := os.Remove(e.path); err != nil {
		t.Fatal(err)
	}
	held.Unlock()
	r := <-done
	if !errors.Is(r.err, cachefile.ErrNoFile) || r.called {
		t.Fatalf("err %v, fn called %v; want ErrNoFile, not called", r.err, r.called)
	}
	if _, err := os.Lstat(e.path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the removed file is back: %v", err)
	}
}

// openCount is how many of this process's descriptors are open on the
// file at path.
func openCount(t *testing.T, path string) int {
	t.Helper()
	want, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if fi, err := os.Stat(filepath.Join("/proc/self/fd", fd.Name())); err == nil && os.SameFile(fi, want) {
			n++
		}
	}
	return n
}
