package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// convcache run prints one report line at exit when the program used
// cuDNN: what the run got from the cache, what it benchmarked and stored,
// what stood aside and why, the time saved where known, and the file.
// Nothing for a program that never used cuDNN, nor with --quiet or
// CONVCACHE_QUIET=1. A backend-API program's verbose summary has no finds
// line.
func TestRunReport(t *testing.T) {
	b := builtDir(t, preloadName, libMajorName, "tests/preload/preload_prog", "tests/preload/v8_prog",
		"tests/preload/libcudnn.so.9", "tests/preload/libcuda.so.1")
	dir := t.TempDir()
	path := filepath.Join(dir, "c.ccdb")
	run := func(env []string, args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"run", "--preload", filepath.Join(b, preloadName), "--path", path}, args...)...)
		cmd.Env = standinEnv(t, append([]string{"STANDIN_EXEC_US=300"}, env...)...)
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Run(); err != nil {
			t.Fatalf("convcache run %v: %v\n%s", args, err, se.String())
		}
		return so.String(), se.String()
	}
	// reported returns the report lines of stderr.
	reported := func(stderr string) []string {
		var out []string
		for _, l := range strings.Split(stderr, "\n") {
			if strings.HasPrefix(l, "convcache: ") {
				out = append(out, l)
			}
		}
		return out
	}
	expect := func(what, stderr, want string) {
		t.Helper()
		if r := reported(stderr); len(r) != 1 || r[0] != want {
			t.Errorf("%s: report %q, want %q\nstderr:\n%s", what, r, want, stderr)
		}
	}
	finds := filepath.Join(b, "tests/preload/preload_prog")
	v8 := filepath.Join(b, "tests/preload/v8_prog")

	_, se := run(nil, "--", finds, "run", filepath.Join(dir, "r1.txt"))
	expect("finds, run 1", se, "convcache: 18 finds: 0 served from the cache, 18 benchmarked and stored; cache "+path)
	_, se = run(nil, "--", finds, "run", filepath.Join(dir, "r2.txt"))
	if r := reported(se); len(r) != 1 || !strings.HasPrefix(r[0], "convcache: 18 finds: 18 served from the cache, 0 benchmarked and stored; benchmark time saved >= ") ||
		!strings.HasSuffix(r[0], " ms; cache "+path) {
		t.Errorf("finds, run 2: %q", r)
	}

	_, se = run(nil, "--", v8, filepath.Join(dir, "v1.txt"))
	expect("graphs, run 1", se, "convcache: 5 graphs: 0 served from the cache, 5 benchmarked, 5 stored; cache "+path)
	_, se = run(nil, "--", v8, filepath.Join(dir, "v2.txt"))
	expect("graphs, run 2", se, "convcache: 5 graphs: 5 served from the cache, 0 benchmarked, 0 stored; cache "+path)
	// A cuDNN whose stored plans read otherwise: they stand aside, and the
	// report says why.
	_, se = run([]string{"STANDIN_SUBSTITUTE=knob"}, "--", v8, filepath.Join(dir, "v3.txt"))
	if r := reported(se); len(r) != 1 || !strings.Contains(r[0], "of them stood aside, mostly: the stored choice's plan runs another engine or knobs than stored)") {
		t.Errorf("stand-asides: %q", r)
	}
	// The verbose summary of a backend-API program has its v8 line only.
	_, se = run(nil, "-v", "--", v8, filepath.Join(dir, "v4.txt"))
	if strings.Contains(se, "convcache-preload: summary: finds") || !strings.Contains(se, "convcache-preload: v8: graphs 5,") || len(reported(se)) != 1 {
		t.Errorf("-v on a backend-API program:\n%s", se)
	}

	// Nothing for a program that never used cuDNN; nothing when quiet.
	if _, se = run(nil, "--", "sh", "-c", "echo hi >&2"); se != "hi\n" {
		t.Errorf("a program without cuDNN: stderr %q", se)
	}
	if _, se = run([]string{"CONVCACHE_REPORT=/inherited.ccdb"}, "--quiet", "--", v8, filepath.Join(dir, "v5.txt")); len(reported(se)) != 0 {
		t.Errorf("--quiet: %q", se)
	}
	if _, se = run([]string{"CONVCACHE_QUIET=1"}, "--", finds, "run", filepath.Join(dir, "r3.txt")); len(reported(se)) != 0 {
		t.Errorf("CONVCACHE_QUIET=1: %q", se)
	}
}
