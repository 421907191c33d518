package main

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/cudnn"
	"github.com/convcache/convcache/internal/cachefile"
)

// agedCache writes entries of two scopes used at different ages: "a/N" in
// gpuA last used N days ago (N = 0..9), and "b/N" in gpuB likewise.
func agedCache(t *testing.T) string {
	t.Helper()
	now := time.Now()
	var es []cachefile.Entry
	for i := 0; i < 10; i++ {
		used := now.Add(-time.Duration(i) * 24 * time.Hour)
		ins := used.Add(-time.Hour)
		es = append(es, entry(gpuA, []byte(fmt.Sprintf("a/%d", i)), make([]byte, 100), ins, used))
		es = append(es, entry(gpuB, []byte(fmt.Sprintf("b/%d", i)), make([]byte, 100), ins, used))
	}
	path := filepath.Join(t.TempDir(), "aged.ccdb")
	writeFile(t, path, es...)
	return path
}

// keys returns the keys left in the file, as a set.
func keys(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := cachefile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, e := range f.Entries() {
		m[string(e.Key)] = true
	}
	return m
}

func TestPruneScope(t *testing.T) {
	path := agedCache(t)
	r := mustRun(t, exitOK, nil, "prune", path, "--scope", gpuB)
	k := keys(t, path)
	if len(k) != 10 || k["b/0"] || !k["a/9"] {
		t.Fatalf("left %v", k)
	}
	if strings.Count(r.stdout, "removed: scope "+gpuB) != 10 || !strings.Contains(r.stdout, "removed 10 entries") {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	r = mustRun(t, exitOK, nil, "prune", path, "--scope", gpuB)
	if !strings.Contains(r.stdout, "nothing to prune; 10 entries unchanged") {
		t.Fatalf("stdout %q", r.stdout)
	}
}

func TestPruneKeepScope(t *testing.T) {
	path := agedCache(t)
	// current = CONVCACHE_SCOPE where it is set.
	r := mustRun(t, exitOK, []string{"CONVCACHE_SCOPE=" + gpuA}, "prune", "--keep-scope", "current", path)
	k := keys(t, path)
	if len(k) != 10 || !k["a/0"] || k["b/0"] {
		t.Fatalf("left %v", k)
	}
	if !strings.Contains(r.stdout, "its scope is not kept") {
		t.Fatalf("stdout %q", r.stdout)
	}
	// Without a driver and without CONVCACHE_SCOPE there is no "current":
	// refuse, change nothing.
	path = agedCache(t)
	r = mustRun(t, exitNoDevice, []string{"CONVCACHE_CUDA_LIBRARY=/nonexistent/libcuda.so.1"}, "prune", "--keep-scope", "current", path)
	if !strings.Contains(r.stderr, "CONVCACHE_SCOPE") || len(keys(t, path)) != 20 {
		t.Fatalf("stderr %q", r.stderr)
	}
	// By name.
	mustRun(t, exitOK, nil, "prune", "--keep-scope", gpuB, path)
	if k := keys(t, path); len(k) != 10 || !k["b/3"] {
		t.Fatalf("left %v", k)
	}
}

func TestPruneOlderThan(t *testing.T) {
	path := agedCache(t)
	// Dry run first: nothing changes.
	before, _ := os.ReadFile(path)
	r := mustRun(t, exitOK, nil, "prune", path, "--older-than", "4d12h", "--dry-run")
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("--dry-run changed the file")
	}
	if !strings.Contains(r.stdout, "would remove 10 entries") {
		t.Fatalf("stdout %q", r.stdout)
	}
	mustRun(t, exitOK, nil, "prune", path, "--older-than", "4.5d")
	k := keys(t, path)
	for i := 0; i < 10; i++ {
		for _, s := range []string{"a", "b"} {
			if k[fmt.Sprintf("%s/%d", s, i)] != (i <= 4) {
				t.Fatalf("after --older-than 4.5d: %v", k)
			}
		}
	}
	// Limited to one scope.
	mustRun(t, exitOK, nil, "prune", path, "--older-than", "36h", "--scope", gpuB)
	k = keys(t, path)
	if len(k) != 7 || !k["a/4"] || !k["b/1"] || k["b/2"] {
		t.Fatalf("after --older-than 36h --scope B: %v", k)
	}
	mustRun(t, exitUsage, nil, "prune", path, "--older-than", "soon")
}

func TestPruneMaxBytes(t *testing.T) {
	path := agedCache(t)
	// Each entry counts 3 + 100 + 16 = 119 bytes; 20 entries are 2380.
	// 1000 bytes hold 8 of them: the most recently used.
	r := mustRun(t, exitOK, nil, "prune", path, "--max-bytes", "1000")
	k := keys(t, path)
	if len(k) != 8 {
		t.Fatalf("left %d: %v", len(k), k)
	}
	for i := 0; i < 4; i++ {
		if !k[fmt.Sprintf("a/%d", i)] || !k[fmt.Sprintf("b/%d", i)] {
			t.Fatalf("a recent entry was evicted: %v", k)
		}
	}
	if !strings.Contains(r.stdout, "least recently used") || !strings.Contains(r.stdout, "removed 12 entries") {
		t.Fatalf("stdout %q", r.stdout)
	}
	mustRun(t, exitOK, nil, "prune", path, "--max-bytes", "1K")
	if len(keys(t, path)) != 8 {
		t.Fatal("1K evicted more")
	}
	mustRun(t, exitUsage, nil, "prune", path, "--max-bytes", "lots")
	// Nothing said: refuse rather than remove everything.
	r = mustRun(t, exitUsage, nil, "prune", path)
	if !strings.Contains(r.stderr, "say what to prune") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

// prune (and dump) show values by the rule ls follows: decoded as cuDNN
// perf structs only when the key says they are, else hex, even 48 bytes
// that would decode into nonsense.
func TestPruneDecodesOnlyPerfValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "values.ccdb")
	p := params(8, 3, 224, 64)
	nonsense := cudnn.Perf{Algo: 1078712435, Time: 3.5, MathType: 1078712435}.Append(nil)
	liveCache(t, path, "s",
		torchKey("demo.conv2d.fwd", p), nonsense,
		torchKey("demo.cudnn.bwd_filter", p), perf(3, 0.25),
	)
	for _, args := range [][]string{{"dump", path}, {"prune", path, "--scope", "s"}} {
		r := mustRun(t, exitOK, nil, args...)
		for _, bad := range []string{"math(", "algo(", "1078712435"} {
			if strings.Contains(r.stdout, bad) {
				t.Errorf("%s decoded a value its key does not vouch for (%q):\n%s", args[0], bad, r.stdout)
			}
		}
		if args[0] == "prune" {
			if want := hex.EncodeToString(nonsense[:lsHexMax]); !strings.Contains(r.stdout, want) {
				t.Errorf("prune: the demo's value is not shown as hex %s:\n%s", want, r.stdout)
			}
			if !strings.Contains(r.stdout, "ALGO_3 0.25 ms") {
				t.Errorf("prune: the cuDNN entry is not decoded:\n%s", r.stdout)
			}
		}
	}
}
