package cachefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
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
