package lock_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convcache/convcache/internal/asuser"
	"github.com/convcache/convcache/lock"
)

// A lock file planted as a link is never followed, even to create it.
func TestLockLinkRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	p := filepath.Join(dir, "c.lock")
	os.Symlink(target, p)
	_, err := lock.New(p).Lock(time.Second)
	if !errors.Is(err, lock.ErrRefused) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Lock through a link: %v", err)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Fatal("the link's target was created")
	}
	if _, err := lock.New(p).TryLockKey(1); !errors.Is(err, lock.ErrRefused) {
		t.Fatalf("TryLockKey through a link: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.lock")
	syscall.Mkfifo(fifo, 0o600)
	if _, err := lock.NewShared(fifo).Lock(time.Second); !errors.Is(err, lock.ErrRefused) {
		t.Fatalf("Lock on a FIFO: %v", err)
	}
}

// A lock file of another user is refused at once (not waited for), unless
// trusted; a new shared one in a group directory is 0660 in its group.
func TestLockOwner(t *testing.T) {
	asuser.NeedRoot(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "c.lock")
	os.WriteFile(p, nil, 0o666)
	os.Chmod(p, 0o666)
	os.Chown(p, asuser.Attacker, asuser.Attacker)
	if _, err := lock.New(p).Lock(time.Hour); !errors.Is(err, lock.ErrRefused) || !strings.Contains(err.Error(), "owned by uid 61003") {
		t.Fatalf("foreign lock file: %v", err)
	}
	lk, err := lock.NewShared(p).Lock(time.Second)
	if err != nil {
		t.Fatalf("foreign lock file, trusted: %v", err)
	}
	lk.Unlock()

	os.Chown(dir, 0, asuser.Group)
	os.Chmod(dir, 0o770)
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	q := filepath.Join(dir, "new.lock")
	lk, err = lock.NewShared(q).Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lk.Unlock()
	fi, _ := os.Stat(q)
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o660 || st.Gid != asuser.Group {
		t.Fatalf("new shared lock file: mode %v gid %d", fi.Mode(), st.Gid)
	}
	r := filepath.Join(dir, "private.lock")
	lk, _ = lock.New(r).Lock(time.Second)
	lk.Unlock()
	if fi, _ := os.Stat(r); fi.Mode().Perm() != 0o600 {
		t.Fatalf("new lock file: mode %v", fi.Mode())
	}
}
