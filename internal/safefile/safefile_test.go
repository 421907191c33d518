package safefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/convcache/convcache/internal/asuser"
	"github.com/convcache/convcache/internal/safefile"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "sub", "real")
	os.MkdirAll(filepath.Dir(real), 0o700)
	os.WriteFile(real, nil, 0o600)
	// A chain: abs -> relative with .. -> real.
	os.Symlink("sub/../sub/real", filepath.Join(dir, "rel"))
	os.Symlink(filepath.Join(dir, "rel"), filepath.Join(dir, "abs"))
	for _, p := range []string{"abs", "rel", "sub/real"} {
		if got, err := safefile.Resolve(filepath.Join(dir, p)); err != nil || got != real {
			t.Errorf("Resolve(%s) = %s, %v", p, got, err)
		}
	}
	missing := filepath.Join(dir, "missing")
	if got, err := safefile.Resolve(missing); err != nil || got != missing {
		t.Errorf("Resolve(missing) = %s, %v", got, err)
	}
	// A link to a missing file resolves to it (a new cache is made there).
	os.Symlink("new", filepath.Join(dir, "tonew"))
	if got, err := safefile.Resolve(filepath.Join(dir, "tonew")); err != nil || got != filepath.Join(dir, "new") {
		t.Errorf("Resolve(tonew) = %s, %v", got, err)
	}
	// A loop, or a chain longer than MaxLinks, is refused.
	os.Symlink("loop", filepath.Join(dir, "loop"))
	if _, err := safefile.Resolve(filepath.Join(dir, "loop")); !errors.Is(err, safefile.ErrRefused) {
		t.Errorf("Resolve(loop) = %v", err)
	}
}

func TestResolveForeignLink(t *testing.T) {
	asuser.NeedRoot(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o600)
	link := filepath.Join(dir, "l")
	os.Symlink("f", link)
	os.Lchown(link, asuser.Attacker, asuser.Attacker)
	got, err := safefile.Resolve(link)
	var re *safefile.RefusedError
	if !errors.As(err, &re) || got != link || re.Trustable || !strings.Contains(re.Error(), "owned by uid 61003") {
		t.Fatalf("Resolve(foreign link) = %s, %v", got, err)
	}
	// Deeper in a chain too.
	own := filepath.Join(dir, "own")
	os.Symlink("l", own)
	if _, err := safefile.Resolve(own); !errors.Is(err, safefile.ErrRefused) {
		t.Fatalf("Resolve(own -> foreign) = %v", err)
	}
	// Root's links are followed.
	os.Lchown(link, 0, 0)
	if got, err := safefile.Resolve(own); err != nil || got != filepath.Join(dir, "f") {
		t.Fatalf("Resolve(own -> root's) = %s, %v", got, err)
	}
}

func TestOpenFileChecks(t *testing.T) {
	dir := t.TempDir()
	p := safefile.Policy{}
	reg := filepath.Join(dir, "reg")
	os.WriteFile(reg, nil, 0o600)
	f, err := safefile.OpenFile(reg, os.O_RDONLY, false, p, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.Chmod(reg, 0o620)
	if _, err := safefile.OpenFile(reg, os.O_RDONLY, false, p, false); !errors.Is(err, safefile.ErrRefused) {
		t.Fatalf("group-writable: %v", err)
	}
	if f, err := safefile.OpenFile(reg, os.O_RDONLY, false, safefile.Policy{TrustShared: true}, false); err != nil {
		t.Fatalf("group-writable, trusted: %v", err)
	} else {
		f.Close()
	}
	link := filepath.Join(dir, "link")
	os.Symlink("reg", link)
	if _, err := safefile.OpenFile(link, os.O_RDONLY, false, p, false); !errors.Is(err, safefile.ErrRefused) ||
		!strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("link: %v", err)
	}
	// A FIFO neither blocks the open nor passes; a directory neither.
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	for _, p2 := range []string{fifo, dir} {
		if _, err := safefile.OpenFile(p2, os.O_RDONLY, false, safefile.Policy{TrustShared: true}, true); !errors.Is(err, safefile.ErrRefused) {
			t.Fatalf("%s: %v", p2, err)
		}
	}
	// A character device passes where devices are allowed.
	if f, err := safefile.OpenFile("/dev/null", os.O_WRONLY, false, p, true); err != nil {
		t.Fatalf("/dev/null for a log: %v", err)
	} else {
		f.Close()
	}
	if _, err := safefile.OpenFile("/dev/null", os.O_WRONLY, false, p, false); !errors.Is(err, safefile.ErrRefused) {
		t.Fatalf("/dev/null for a cache: %v", err)
	}
	// Created: 0600 whatever the umask.
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	n := filepath.Join(dir, "new")
	f, err = safefile.OpenFile(n, os.O_RDWR, true, p, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, _ := os.Stat(n); fi.Mode().Perm() != 0o600 {
		t.Fatalf("new file mode %v", fi.Mode())
	}
	// A link at the path is not followed to create its target.
	os.Symlink(filepath.Join(dir, "target"), filepath.Join(dir, "dangling"))
	if _, err := safefile.OpenFile(filepath.Join(dir, "dangling"), os.O_RDWR, true, p, false); !errors.Is(err, safefile.ErrRefused) {
		t.Fatalf("dangling link: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "target")); err == nil {
		t.Fatal("created the target of a link")
	}
}

// With TrustShared, a new file in a group-writable directory is 0660 and
// in the directory's group, whatever the umask; elsewhere 0600.
func TestNewFileAttrs(t *testing.T) {
	asuser.NeedRoot(t)
	dir := t.TempDir()
	os.Chown(dir, 0, asuser.Group)
	os.Chmod(dir, 0o770)
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	shared := safefile.Policy{TrustShared: true}
	if a := safefile.NewFileAttrs(dir, shared); a.Perm != 0o660 || a.GID != asuser.Group {
		t.Fatalf("attrs %+v", a)
	}
	if a := safefile.NewFileAttrs(dir, safefile.Policy{}); a != safefile.Private {
		t.Fatalf("untrusting attrs %+v", a)
	}
	p := filepath.Join(dir, "f")
	f, err := safefile.OpenFile(p, os.O_RDWR, true, shared, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, _ := os.Stat(p)
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o660 || st.Gid != asuser.Group {
		t.Fatalf("mode %v gid %d", fi.Mode(), st.Gid)
	}
	if a := safefile.NewFileAttrs(t.TempDir(), shared); a != safefile.Private {
		t.Fatalf("private directory: %+v", a)
	}
}

func TestForeignOwner(t *testing.T) {
	asuser.NeedRoot(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, nil, 0o644)
	os.Chown(p, asuser.Attacker, asuser.Attacker)
	_, err := safefile.OpenFile(p, os.O_RDONLY, false, safefile.Policy{}, false)
	var re *safefile.RefusedError
	if !errors.As(err, &re) || !re.Trustable || !strings.Contains(re.Hint(), "CONVCACHE_TRUST_SHARED") {
		t.Fatalf("foreign owner: %v", err)
	}
	os.Chown(p, 0, 0)
	if f, err := safefile.OpenFile(p, os.O_RDONLY, false, safefile.Policy{}, false); err != nil {
		t.Fatalf("root's file: %v", err)
	} else {
		f.Close()
	}
}
