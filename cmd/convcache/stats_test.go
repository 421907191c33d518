package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func stats(t *testing.T, env []string, args ...string) statsReport {
	t.Helper()
	r := mustRun(t, exitOK, env, append([]string{"stats", "--json"}, args...)...)
	var s statsReport
	decodeJSON(t, r.stdout, &s)
	return s
}

func TestStats(t *testing.T) {
	path := sampleCache(t)
	s := stats(t, nil, path)
	c := s.Cache
	if !c.Exists || c.Path != path || c.Entries != 4 || len(c.Scopes) != 2 {
		t.Fatalf("report %+v", c)
	}
	// Scopes sorted by name: A100 (1 entry), H100 (3).
	if c.Scopes[0].Name != gpuB || c.Scopes[0].Entries != 1 || c.Scopes[1].Name != gpuA || c.Scopes[1].Entries != 3 {
		t.Fatalf("scopes %+v", c.Scopes)
	}
	if c.Scopes[1].LastUsed == nil || time.Since(*c.Scopes[1].LastUsed) > time.Minute {
		t.Fatalf("last used %v", c.Scopes[1].LastUsed)
	}
	fi, _ := os.Stat(path)
	// Inserted through the engine: every record is in the journal.
	if c.Size != fi.Size() || c.SnapshotBytes != 0 || c.JournalBytes != c.Size-32 || c.Records < 6 {
		t.Fatalf("sizes %+v", c)
	}
	if c.FSType == "" || c.NetworkFS || c.TornTail != nil || len(c.Corrupt) != 0 || len(s.Warnings) != 0 {
		t.Fatalf("health %+v, warnings %q", c, s.Warnings)
	}
	// Created by writers, never compacted: the header's time is the
	// file's creation, not a compaction.
	if c.LastCompaction != nil {
		t.Fatalf("last compaction %v, want never", c.LastCompaction)
	}
	if r := mustRun(t, exitOK, nil, "stats", path); !strings.Contains(r.stdout, "last compaction  never\n") {
		t.Fatalf("stats of a file never compacted:\n%s", r.stdout)
	}
	if s.Mode != "rw" || s.System != nil || s.Remote != nil {
		t.Fatalf("tiers %+v", s)
	}

	// After a compaction, the entries are in the snapshot.
	mustRun(t, exitOK, nil, "compact", path)
	c = stats(t, nil, path).Cache
	if c.JournalBytes != 0 || c.SnapshotBytes != c.Size-32 || c.Entries != 4 {
		t.Fatalf("after compact %+v", c)
	}
	if c.LastCompaction == nil || time.Since(*c.LastCompaction) > time.Minute {
		t.Fatalf("last compaction %v, want now", c.LastCompaction)
	}

	// The text form, from the default path.
	r := mustRun(t, exitOK, []string{"CONVCACHE_PATH=" + path, "CONVCACHE_MODE=ro", "CONVCACHE_MAX_BYTES=64M"}, "stats")
	for _, want := range []string{"file             " + path, "entries          4 in 2 scope(s)", "damage           none",
		"  " + gpuA, "mode         ro", "max bytes 64.0 MiB", "system tier  none", "remote tier  none"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stats lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestStatsMissingAndForeign(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.ccdb")
	def := []string{"CONVCACHE_PATH=" + missing} // the default file; a missing PATH is an error (path_test.go)
	s := stats(t, def)
	if s.Cache.Exists || s.Cache.Entries != 0 {
		t.Fatalf("missing file: %+v", s.Cache)
	}
	r := mustRun(t, exitOK, def, "stats")
	if !strings.Contains(r.stdout, "not created yet") {
		t.Fatalf("stdout %q", r.stdout)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("stats created the file")
	}

	foreign := filepath.Join(dir, "notes.txt")
	os.WriteFile(foreign, []byte("these are not the entries you are looking for"), 0o600)
	r = mustRun(t, exitIO, nil, "stats", foreign)
	if !strings.Contains(r.stderr, foreign) || !strings.Contains(r.stderr, "not a convcache file") || !strings.Contains(r.stderr, "check the path") {
		t.Fatalf("stderr %q", r.stderr)
	}
	r = mustRun(t, exitUsage, nil, "stats", dir)
	if !strings.Contains(r.stderr, "is a directory") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestStatsDamage(t *testing.T) {
	path := sampleCache(t)
	data, _ := os.ReadFile(path)
	// A torn tail: a frame header promising more bytes than follow.
	torn := append(append([]byte(nil), data...), 0xE7, 'C', 'C', 'R', 1, 0, 0, 0, 50, 0, 0, 0)
	os.WriteFile(path, torn, 0o600)
	s := stats(t, nil, path)
	if s.Cache.TornTail == nil || s.Cache.TornTail.Offset != int64(len(data)) || len(s.Cache.Corrupt) != 0 {
		t.Fatalf("torn tail: %+v", s.Cache)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "torn tail at offset "+strconv.Itoa(len(data))) {
		t.Fatalf("warnings %q", s.Warnings)
	}
	// A flipped byte in the middle: a corrupt record.
	flipped := append([]byte(nil), data...)
	flipped[len(data)/2] ^= 0x40
	os.WriteFile(path, flipped, 0o600)
	s = stats(t, nil, path)
	if len(s.Cache.Corrupt) != 1 || s.Cache.Entries != 3 {
		t.Fatalf("corrupt: %+v", s.Cache)
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "convcache compact "+path) {
		t.Fatalf("warnings %q", s.Warnings)
	}
}

func TestStatsSystemTier(t *testing.T) {
	path := sampleCache(t)
	sys := filepath.Join(t.TempDir(), "system.ccdb")
	mustRun(t, exitOK, nil, "export", path, "--scope", gpuA, "-o", sys)
	s := stats(t, []string{"CONVCACHE_SYSTEM_PATH=" + sys, "CONVCACHE_PROMOTE=1"}, path)
	if s.System == nil || !s.System.Exists || s.System.Entries != 3 || len(s.System.Scopes) != 1 || !s.Promote {
		t.Fatalf("system tier %+v", s.System)
	}
	r := mustRun(t, exitOK, []string{"CONVCACHE_SYSTEM_PATH=" + sys}, "stats", path)
	if !strings.Contains(r.stdout, "system tier (CONVCACHE_SYSTEM_PATH, read-only; hits stay in the system tier)") ||
		!strings.Contains(r.stdout, "file             "+sys) {
		t.Fatalf("stdout:\n%s", r.stdout)
	}

	missing := filepath.Join(t.TempDir(), "gone.ccdb")
	s = stats(t, []string{"CONVCACHE_SYSTEM_PATH=" + missing}, path)
	if s.System == nil || s.System.Error == "" || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "CONVCACHE_SYSTEM_PATH") {
		t.Fatalf("missing system tier: %+v, warnings %q", s.System, s.Warnings)
	}
}

func TestStatsRemote(t *testing.T) {
	path := sampleCache(t)
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := stats(t, []string{"CONVCACHE_REMOTE=redis://:secret@" + addr + "/0", "CONVCACHE_REMOTE_TIMEOUT_MS=200"}, path)
	if s.Remote == nil || s.Remote.Reachable || !strings.Contains(s.Remote.Error, "unreachable") {
		t.Fatalf("remote %+v", s.Remote)
	}
	// Without CONVCACHE_REMOTE_TIMEOUT_MS the probe waits as long as the
	// library's lookups do (config.DefaultRemoteTimeout).
	s = stats(t, []string{"CONVCACHE_REMOTE=redis://" + addr + "/0"}, path)
	if s.Remote == nil || s.Remote.Reachable || !strings.Contains(s.Remote.Error, "unreachable within 50ms") {
		t.Fatalf("default timeout: remote %+v", s.Remote)
	}
	r := mustRun(t, exitOK, []string{"CONVCACHE_REMOTE=redis://:secret@" + addr + "/0", "CONVCACHE_REMOTE_TIMEOUT_MS=200"}, "stats", path)
	if strings.Contains(r.stdout+r.stderr, "secret") {
		t.Fatalf("the password was printed:\n%s%s", r.stdout, r.stderr)
	}
	s = stats(t, []string{"CONVCACHE_REMOTE=http://example.com"}, path)
	if s.Remote == nil || s.Remote.Reachable || !strings.Contains(s.Remote.Error, "CONVCACHE_REMOTE") {
		t.Fatalf("bad URL: %+v", s.Remote)
	}

	// A real server, where redis-server is installed.
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Log("redis-server not installed: reachable case skipped")
		return
	}
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test, however it ends
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	url := "redis://127.0.0.1:" + strconv.Itoa(port) + "/0"
	for i := 0; i < 3000; i++ { // up to a minute: a loaded machine starts it late
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	s = stats(t, []string{"CONVCACHE_REMOTE=" + url, "CONVCACHE_REMOTE_TIMEOUT_MS=30000"}, path)
	if s.Remote == nil || !s.Remote.Reachable || s.Remote.URL != url {
		t.Fatalf("remote %+v", s.Remote)
	}
}

// A file compacted down to no entries has no snapshot, yet was compacted:
// the header's flag says so.
func TestStatsLastCompactionOfEmptiedFile(t *testing.T) {
	path := agedCache(t)
	mustRun(t, exitOK, nil, "prune", path, "--scope", gpuA)
	mustRun(t, exitOK, nil, "prune", path, "--scope", gpuB)
	c := stats(t, nil, path).Cache
	if c.Entries != 0 || c.SnapshotBytes != 0 {
		t.Fatalf("after pruning everything %+v", c)
	}
	if c.LastCompaction == nil || time.Since(*c.LastCompaction) > time.Minute {
		t.Fatalf("last compaction %v, want now", c.LastCompaction)
	}
}
