package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
	"github.com/convcache/convcache/lock"
)

func verify(t *testing.T, want int, args ...string) verifyReport {
	t.Helper()
	r := mustRun(t, want, nil, append([]string{"verify", "--json"}, args...)...)
	var v verifyReport
	decodeJSON(t, r.stdout, &v)
	if r.stderr != "" {
		t.Fatalf("verify wrote to a standard error that is not a terminal: %q", r.stderr)
	}
	return v
}

func TestVerify(t *testing.T) {
	path := sampleCache(t)
	v := verify(t, exitOK, path)
	if !v.OK || v.Entries != 4 || v.Scopes != 2 || len(v.Corrupt) != 0 || v.TornTail != nil || len(v.Problems) != 0 {
		t.Fatalf("clean file: %+v", v)
	}
	r := mustRun(t, exitOK, nil, "verify", path)
	if !strings.Contains(r.stdout, path+": ok: ") || !strings.Contains(r.stdout, "4 entries in 2 scope(s)") {
		t.Fatalf("stdout %q", r.stdout)
	}

	// Flip one byte in the middle of the journal: one corrupt record, its
	// offset reported, exit 1.
	data, _ := os.ReadFile(path)
	at := len(data) / 2
	bad := append([]byte(nil), data...)
	bad[at] ^= 0x01
	os.WriteFile(path, bad, 0o600)
	v = verify(t, exitDamage, path)
	if v.OK || len(v.Corrupt) != 1 || v.Entries != 3 {
		t.Fatalf("flipped byte: %+v", v)
	}
	d := v.Corrupt[0]
	if d.Offset > int64(at) || d.Offset+d.Length <= int64(at) {
		t.Fatalf("damage %+v does not cover the flipped byte at %d", d, at)
	}
	r = mustRun(t, exitDamage, nil, "verify", path)
	if !strings.Contains(r.stdout, fmt.Sprintf("corrupt record at offset %d (0x%x), %d bytes", d.Offset, d.Offset, d.Length)) ||
		!strings.Contains(r.stdout, "FAILED") || !strings.Contains(r.stdout, "convcache compact "+path) {
		t.Fatalf("stdout:\n%s", r.stdout)
	}

	// compact drops the damage; verify passes again.
	mustRun(t, exitOK, nil, "compact", path)
	if v = verify(t, exitOK, path); v.Entries != 3 {
		t.Fatalf("after compact: %+v", v)
	}
}

func TestVerifyTornTail(t *testing.T) {
	path := sampleCache(t)
	data, _ := os.ReadFile(path)
	torn := append(append([]byte(nil), data...), 0xE7, 'C', 'C', 'R', 1, 0, 0, 0, 50, 0, 0, 0, 1, 2)
	os.WriteFile(path, torn, 0o600)
	// A torn tail is a warning...
	v := verify(t, exitOK, path)
	if !v.OK || v.TornTail == nil || v.TornTail.Offset != int64(len(data)) || v.TornTail.Length != 14 || len(v.Warnings) != 1 {
		t.Fatalf("torn tail: %+v", v)
	}
	r := mustRun(t, exitOK, nil, "verify", path)
	if !strings.Contains(r.stdout, fmt.Sprintf("warning: %s: torn tail at offset %d", path, len(data))) {
		t.Fatalf("stdout %q", r.stdout)
	}
	// ...and damage with --strict.
	v = verify(t, exitDamage, path, "--strict")
	if v.OK || len(v.Problems) != 1 {
		t.Fatalf("strict: %+v", v)
	}
}

func TestVerifyHeaderAndErrors(t *testing.T) {
	path := sampleCache(t)
	data, _ := os.ReadFile(path)
	data[20] ^= 0xff // the creation time: fails the header checksum
	os.WriteFile(path, data, 0o600)
	v := verify(t, exitDamage, path)
	if v.OK || v.Header == "" || !strings.Contains(v.Problems[0], "header damaged at offset 0") {
		t.Fatalf("header: %+v", v)
	}

	dir := t.TempDir()
	r := mustRun(t, exitIO, nil, "verify", filepath.Join(dir, "missing.ccdb"))
	if !strings.Contains(r.stderr, filepath.Join(dir, "missing.ccdb")+" does not exist") || !strings.Contains(r.stderr, "check the path") {
		t.Fatalf("stderr %q", r.stderr)
	}
	other := filepath.Join(dir, "other")
	os.WriteFile(other, []byte("#!/bin/sh\necho hello\n-------------------------------------"), 0o600)
	r = mustRun(t, exitIO, nil, "verify", other)
	if !strings.Contains(r.stderr, other) || !strings.Contains(r.stderr, "not a convcache file") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestCompact(t *testing.T) {
	path := sampleCache(t)
	// A live handle has the file open while it is compacted.
	c, err := cache.Open(path, &cache.Options{Scope: gpuA})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before, _ := os.Stat(path)
	r := mustRun(t, exitOK, nil, "compact", path)
	if !strings.Contains(r.stdout, "compacted "+path) || !strings.Contains(r.stdout, "4 entries in 2 scope(s)") {
		t.Fatalf("stdout %q", r.stdout)
	}
	f, err := cachefile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.JournalBytes != 0 || len(f.Entries()) != 4 || !f.Created.After(time.Now().Add(-time.Minute)) {
		t.Fatalf("after compact: journal %d, %d entries", f.JournalBytes, len(f.Entries()))
	}
	if f.Size >= before.Size() {
		t.Logf("compacted %d -> %d bytes", before.Size(), f.Size)
	}
	// The handle still finds its entries and writes to the new file.
	k := torchKey(v7+"fwd", params(32, 64, 56, 64))
	if v, ok, err := c.Get(k); err != nil || !ok || len(v) != 48 {
		t.Fatalf("get after compact: %v %v", ok, err)
	}
	if err := c.Insert([]byte("after"), []byte("compact")); err != nil {
		t.Fatal(err)
	}
	if f, _ := cachefile.ReadFile(path); len(f.Entries()) != 5 {
		t.Fatalf("insert after compact: %d entries", len(f.Entries()))
	}

	// A lock held elsewhere: exit 5 after --lock-timeout, file unchanged.
	lk, err := lock.New(path + ".lock").Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r = mustRun(t, exitLock, nil, "compact", path, "--lock-timeout", "300ms")
	lk.Unlock()
	if el := time.Since(start); el < 300*time.Millisecond || el > 10*time.Second {
		t.Fatalf("waited %v", el)
	}
	if !strings.Contains(r.stderr, path+".lock") || !strings.Contains(r.stderr, "--lock-timeout") {
		t.Fatalf("stderr %q", r.stderr)
	}
	// The default file not created yet, or an empty file, is nothing to
	// do: one line, exit 0, and no file is made.
	for _, c := range []struct{ name, content, why string }{
		{"none.ccdb", "", "has not been created yet"},
		{"empty.ccdb", "-", "is empty"},
		{"header.ccdb", "header", "holds no records"},
	} {
		p := filepath.Join(t.TempDir(), c.name)
		switch c.content {
		case "-":
			os.WriteFile(p, nil, 0o600)
		case "header":
			writeFile(t, p)
		}
		before, _ := os.ReadFile(p)
		r := mustRun(t, exitOK, []string{"CONVCACHE_PATH=" + p}, "compact")
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], p) || !strings.Contains(lines[0], c.why) || !strings.HasSuffix(lines[0], "nothing to compact") || r.stderr != "" {
			t.Errorf("compact of a file that %s: stdout %q stderr %q", c.why, r.stdout, r.stderr)
		}
		after, err := os.ReadFile(p)
		if c.content == "" && !errors.Is(err, fs.ErrNotExist) || c.content != "" && !bytes.Equal(before, after) {
			t.Errorf("compact of a file that %s changed it", c.why)
		}
	}

	// Through a symbolic link: the file it names is replaced, under that
	// file's lock, and the link stays a link.
	link := filepath.Join(t.TempDir(), "link.ccdb")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	lk, err = lock.New(path + ".lock").Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, exitLock, nil, "compact", link, "--lock-timeout", "100ms")
	lk.Unlock()
	r = mustRun(t, exitOK, nil, "compact", link)
	if !strings.Contains(r.stdout, "compacted "+path) {
		t.Fatalf("stdout %q", r.stdout)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced by a file")
	}
	if _, err := os.Stat(link + ".lock"); err == nil {
		t.Fatal("a lock file was made beside the link")
	}
}
