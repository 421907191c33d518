package remote_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/convcache/convcache/remote"
)

// A key file is read only if it is the user's own regular file that no one
// else can write, and not world-readable; a symlink, a FIFO, a directory or
// a file of the wrong size is refused, without hanging and without showing
// the key.
func TestReadMACKeyFile(t *testing.T) {
	dir := t.TempDir()
	const secret = "0123456789abcdef-the-secret"
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", secret+"\n", 0o600)
	if k, err := remote.ReadMACKeyFile(good); err != nil || string(k) != secret {
		t.Fatalf("0600 key file: %q %v", k, err)
	}
	if k, err := remote.ReadMACKeyFile(write("group", secret, 0o640)); err != nil || string(k) != secret {
		t.Fatalf("0640 key file: %q %v", k, err)
	}
	if k, err := remote.ReadMACKeyFile(write("ro", secret, 0o400)); err != nil || string(k) != secret {
		t.Fatalf("0400 key file: %q %v", k, err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"world-readable", write("world", secret, 0o644), "mode 0644"},
		{"group-writable", write("gw", secret, 0o620), "mode 0620"},
		{"world-writable", write("ww", secret, 0o602), "mode 0602"},
		{"short", write("short", "0123456789abcde\n", 0o600), "the key is 15 bytes"},
		{"empty", write("empty", "", 0o600), "the key is 0 bytes"},
		{"long", write("long", strings.Repeat("k", remote.MaxMACKeySize+1), 0o600), "longer than 4096 bytes"},
		{"symlink", link, "is a symbolic link"},
		{"fifo", fifo, "not a regular file"},
		{"directory", dir, "not a regular file"},
		{"missing", filepath.Join(dir, "missing"), "no such file"},
	} {
		k, err := remote.ReadMACKeyFile(tc.path)
		if !errors.Is(err, remote.ErrMACKey) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %q %v, want %q", tc.name, k, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "the-secret") {
			t.Errorf("%s: the error shows the key: %v", tc.name, err)
		}
	}
	// Another user's file: only root can make one here.
	if os.Geteuid() == 0 {
		p := write("other", secret, 0o600)
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := remote.ReadMACKeyFile(p); !errors.Is(err, remote.ErrMACKey) || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("another user's key file: %v", err)
		}
	}
}
