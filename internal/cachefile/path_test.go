package cachefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
	"github.com/convcache/convcache/lock"
)

func TestResolvePath(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.ccdb")
	if err := cachefile.WriteNew(real, nil); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.ccdb")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if got, err := cachefile.ResolvePath(link); err != nil || got != real {
		t.Fatalf("ResolvePath(link) = %q, %v; want %q", got, err, real)
	}
	missing := filepath.Join(dir, "missing.ccdb")
	if got, err := cachefile.ResolvePath(missing); err != nil || got != missing {
		t.Fatalf("ResolvePath(missing) = %q, %v", got, err)
	}
	if _, err := cachefile.ResolvePath(dir); !errors.Is(err, cache.ErrInvalid) {
		t.Fatalf("ResolvePath(dir) = %v", err)
	}
}

func TestUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "cache.ccdb")
	add := func(in []cachefile.Entry) ([]cachefile.Entry, error) {
		return append(in, cachefile.Entry{Scope: "s", Key: []byte{byte(len(in))}, Value: []byte("v")}), nil
	}
	// A missing file (and directory) is created.
	if err := cachefile.Update(path, time.Second, add); err != nil {
		t.Fatal(err)
	}
	if err := cachefile.Update(path, time.Second, add); err != nil {
		t.Fatal(err)
	}
	f, err := cachefile.ReadFile(path)
	if err != nil || len(f.Entries()) != 2 {
		t.Fatalf("after two updates: %v", err)
	}
	if fi, _ := os.Stat(filepath.Dir(path)); fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v", fi.Mode())
	}
	// An open handle sees the new file.
	c, err := cache.Open(path, &cache.Options{Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := cachefile.Update(path, time.Second, add); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.Get([]byte{2}); !ok {
		t.Fatal("handle does not see the updated file")
	}
	// An error from fn leaves the file alone; a held lock times out.
	before, _ := os.ReadFile(path)
	boom := errors.New("boom")
	if err := cachefile.Update(path, time.Second, func([]cachefile.Entry) ([]cachefile.Entry, error) { return nil, boom }); err != boom {
		t.Fatalf("fn error: %v", err)
	}
	lk, err := lock.New(path + ".lock").Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	err = cachefile.Update(path, 50*time.Millisecond, add)
	lk.Unlock()
	if !errors.Is(err, cache.ErrLock) {
		t.Fatalf("held lock: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("file changed")
	}
	// A file that is not a cache is refused, never replaced.
	other := filepath.Join(t.TempDir(), "notes")
	os.WriteFile(other, []byte("not a cache file at all, no"), 0o600)
	if err := cachefile.Update(other, time.Second, add); !errors.Is(err, cache.ErrFormat) {
		t.Fatalf("foreign file: %v", err)
	}
}
