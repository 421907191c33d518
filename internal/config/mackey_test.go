package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
	if k, err := ReadMACKeyFile(good); err != nil || string(k) != secret {
		t.Fatalf("0600 key file: %q %v", k, err)
	}
	if k, err := ReadMACKeyFile(write("group", secret, 0o640)); err != nil || string(k) != secret {
		t.Fatalf("0640 key file: %q %v", k, err)
	}
	if k, err := ReadMACKeyFile(write("ro", secret, 0o400)); err != nil || string(k) != secret {
		t.Fatalf("0400 key file: %q %v", k, err)
	}
	// The bound is on the file: a key and its newline, MaxMACKeySize bytes.
	if k, err := ReadMACKeyFile(write("max", strings.Repeat("k", MaxMACKeySize-1)+"\n", 0o600)); err != nil || len(k) != MaxMACKeySize-1 {
		t.Fatalf("a file of MaxMACKeySize bytes: %d %v", len(k), err)
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
		{"blank", write("blank", " \n\n", 0o600), "the key is 0 bytes"},
		{"long", write("long", strings.Repeat("k", MaxMACKeySize+1), 0o600), "longer than 4096 bytes"},
		{"symlink", link, "is a symbolic link"},
		{"fifo", fifo, "not a regular file"},
		{"directory", dir, "not a regular file"},
		{"missing", filepath.Join(dir, "missing"), "no such file"},
	} {
		k, err := ReadMACKeyFile(tc.path)
		if !errors.Is(err, ErrMACKey) || !strings.Contains(err.Error(), tc.want) {
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
		if _, err := ReadMACKeyFile(p); !errors.Is(err, ErrMACKey) || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("another user's key file: %v", err)
		}
	}
}

// The MAC key comes from a file or a variable, never both; a key that
// cannot be used is a warning (that never shows it) and no tier.
func TestMACKeyEnv(t *testing.T) {
	dir := t.TempDir()
	const secret = "sixteen or more bytes of key"
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	good := file("key", secret+"\n", 0o600)
	for _, tc := range []struct {
		name    string
		env     map[string]string
		key     string
		ok      bool
		warning string
	}{
		{"none", nil, "", true, ""},
		{"empty", map[string]string{"CONVCACHE_REMOTE_KEY": "", "CONVCACHE_REMOTE_KEY_FILE": " "}, "", true, ""},
		{"file", map[string]string{"CONVCACHE_REMOTE_KEY_FILE": good}, secret, true, ""},
		{"file, spaces around its name", map[string]string{"CONVCACHE_REMOTE_KEY_FILE": " " + good + "\n"}, secret, true, ""},
		{"variable", map[string]string{"CONVCACHE_REMOTE_KEY": secret + "\n"}, secret, true, ""},
		{"variable, leading space kept", map[string]string{"CONVCACHE_REMOTE_KEY": " " + secret}, " " + secret, true, ""},
		{"both", map[string]string{"CONVCACHE_REMOTE_KEY": secret, "CONVCACHE_REMOTE_KEY_FILE": good}, "", false, "set one of them"},
		{"short variable", map[string]string{"CONVCACHE_REMOTE_KEY": "hunter2"}, "", false, "the key is 7 bytes"},
		{"long variable", map[string]string{"CONVCACHE_REMOTE_KEY": strings.Repeat("hunter2", 600)}, "", false, "the key is 4200 bytes"},
		{"world-readable file", map[string]string{"CONVCACHE_REMOTE_KEY_FILE": file("open", secret, 0o644)}, "", false, "mode 0644"},
		{"missing file", map[string]string{"CONVCACHE_REMOTE_KEY_FILE": filepath.Join(dir, "nope")}, "", false, "no such file"},
	} {
		v, w := varsOf(t, tc.env)
		key, ok := v.MACKey()
		if string(key) != tc.key || ok != tc.ok {
			t.Errorf("%s: %q %v, want %q %v", tc.name, key, ok, tc.key, tc.ok)
		}
		out := w.String()
		if tc.warning == "" && out != "" || tc.warning != "" && (!strings.Contains(out, tc.warning) ||
			lines(w) != 1 || !strings.Contains(out, "local cache only")) {
			t.Errorf("%s: warning %q, want %q", tc.name, out, tc.warning)
		}
		if strings.Contains(out, "hunter2") || strings.Contains(out, secret) {
			t.Errorf("%s: the warning shows the key: %q", tc.name, out)
		}
	}
}
