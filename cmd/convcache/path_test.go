package main

import (
	le "encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A cache file named on the command line must exist: every command that
// takes one says so in one line and exits 3, and writes nothing on
// standard output (a mistyped path is never an empty cache).
func TestMissingPathIsAnError(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.ccdb")
	for _, args := range [][]string{
		{"stats", missing},
		{"stats", "--json", missing},
		{"ls", missing},
		{"ls", "--json", missing},
		{"dump", missing},
		{"verify", missing},
		{"compact", missing},
		{"prune", missing, "--older-than", "1d"},
		{"export", missing, "-o", filepath.Join(dir, "out.ccdb")},
	} {
		r := mustRun(t, exitIO, nil, args...)
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		want := "convcache " + args[0] + ": " + missing + " does not exist: check the path"
		if r.stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
			t.Errorf("convcache %s: stdout %q stderr %q, want one line starting %q", strings.Join(args, " "), r.stdout, r.stderr, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out.ccdb")); err == nil {
		t.Error("export wrote a bundle from a file that does not exist")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a command created the missing file")
	}
}

// The default cache file (CONVCACHE_PATH, else the XDG path) may not exist
// yet: no program has used the cache. stats, ls, dump, verify and compact
// agree: nothing cached yet, exit 0 (a CI step `convcache verify || fail`
// passes on a fresh machine); prune and export need a file and exit 3,
// saying it has not been created yet.
func TestMissingDefaultIsNotCreatedYet(t *testing.T) {
	def := filepath.Join(t.TempDir(), "sub", "cache.ccdb")
	env := []string{"CONVCACHE_PATH=" + def}
	for _, c := range []struct {
		args       []string
		code       int
		out, errs  string
		jsonOutput bool
	}{
		{[]string{"stats"}, exitOK, "not created yet: nothing cached yet", "", false},
		{[]string{"stats", "--json"}, exitOK, `"exists": false`, "", false},
		{[]string{"ls"}, exitOK, "", "has not been created yet: nothing cached yet", false},
		{[]string{"ls", "--json"}, exitOK, "[]", "has not been created yet: nothing cached yet", true},
		{[]string{"dump"}, exitOK, "", "has not been created yet: nothing cached yet", false},
		{[]string{"compact"}, exitOK, "has not been created yet: nothing cached yet; nothing to compact", "", false},
		{[]string{"verify"}, exitOK, "has not been created yet: nothing cached yet, nothing to verify", "", false},
		{[]string{"verify", "--json"}, exitOK, `"exists": false,
  "ok": true`, "", false},
		{[]string{"prune", "--older-than", "1d"}, exitIO, "", "has not been created yet", false},
	} {
		r := mustRun(t, c.code, env, c.args...)
		if !strings.Contains(r.stdout, c.out) || !strings.Contains(r.stderr, c.errs) || !strings.Contains(r.stdout+r.stderr, def) && !c.jsonOutput {
			t.Errorf("convcache %s with the default file missing: stdout %q stderr %q", strings.Join(c.args, " "), r.stdout, r.stderr)
		}
		if c.code == exitIO && strings.Contains(r.stderr, "check the path") {
			t.Errorf("convcache %s blames a path the user did not give: %q", strings.Join(c.args, " "), r.stderr)
		}
	}
	if _, err := os.Stat(def); err == nil {
		t.Error("a command created the default file")
	}
}

// A file that is not a convcache file is said to be one once, with no
// advice to upgrade; a convcache file of a newer format version asks for an
// upgrade.
func TestNotACacheFileMessage(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("these are not the entries you are looking for\n"), 0o600)
	empty := filepath.Join(dir, "empty.ccdb")
	os.WriteFile(empty, nil, 0o600)
	newer := filepath.Join(dir, "newer.ccdb")
	writeFile(t, newer)
	b, err := os.ReadFile(newer)
	if err != nil {
		t.Fatal(err)
	}
	b[8] = 7 // the format version, after the 8-byte magic
	// sealed as a writer of that version would: its checksum covers it (a
	// version changed under an old checksum is a damaged header)
	le.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], crc32.MakeTable(crc32.Castagnoli)))
	os.WriteFile(newer, b, 0o600)

	for _, cmd := range []string{"stats", "ls", "verify"} {
		for _, c := range []struct {
			path, want string
			upgrade    bool
		}{
			{text, text + " is not a convcache file (unknown magic number): check the path", false},
			{empty, empty + " is empty, not a convcache file: check the path", false},
			{newer, newer + " was written by a newer convcache, in a file format this one does not read (it reads format 1): upgrade convcache", true},
		} {
			r := mustRun(t, exitIO, nil, cmd, c.path)
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if len(lines) != 1 || lines[0] != "convcache "+cmd+": "+c.want {
				t.Errorf("convcache %s %s: stderr %q, want %q", cmd, filepath.Base(c.path), r.stderr, "convcache "+cmd+": "+c.want)
			}
			if n := strings.Count(r.stderr, "not a convcache file"); n > 1 {
				t.Errorf("convcache %s %s says it is not a convcache file %d times: %q", cmd, filepath.Base(c.path), n, r.stderr)
			}
			if strings.Contains(r.stderr, "upgrade") != c.upgrade {
				t.Errorf("convcache %s %s: upgrade advice %v: %q", cmd, filepath.Base(c.path), !c.upgrade, r.stderr)
			}
		}
	}
}
