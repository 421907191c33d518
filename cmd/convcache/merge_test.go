package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/cudnn"
	"github.com/convcache/convcache/internal/cachefile"
)

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	a, b, out := filepath.Join(dir, "a.ccdb"), filepath.Join(dir, "b.ccdb"), filepath.Join(dir, "out.ccdb")
	old := time.Now().Add(-48 * time.Hour)
	recent := time.Now().Add(-time.Hour)
	conv := torchKey(v7+"fwd", params(32, 64, 56, 64))
	conv2 := torchKey(v7+"bwd_data", params(16, 32, 28, 32))
	writeFile(t, a,
		// Known layout: a's value is newer but slower.
		entry(gpuA, conv, perf(2, 0.20), recent, recent),
		// Unknown layout: a's value is older.
		entry(gpuA, []byte("blob"), []byte("old"), old, recent),
		// Same value in both: not a conflict; the later use is kept.
		entry(gpuA, conv2, perf(0, 0.3), old, old),
		// Only in a, another scope.
		entry(gpuB, conv, perf(1, 0.5), old, old),
	)
	writeFile(t, b,
		entry(gpuA, conv, perf(1, 0.10), old, old),
		entry(gpuA, []byte("blob"), []byte("new"), recent, recent),
		entry(gpuA, conv2, perf(0, 0.3), old, recent),
		// Known layout, but a failed measurement: the successful one wins
		// whatever the times.
		entry(gpuA, torchKey(v7+"fwd", params(1, 3, 8, 3)), cacheFailedPerf(), recent, recent),
	)
	writeFile(t, filepath.Join(dir, "c.ccdb"),
		entry(gpuA, torchKey(v7+"fwd", params(1, 3, 8, 3)), perf(4, 9.5), old, old),
	)
	r := mustRun(t, exitOK, nil, "merge", a, b, filepath.Join(dir, "c.ccdb"), "-o", out)
	if !strings.Contains(r.stdout, "merged 3 file(s) into "+out+": 5 entries in 2 scope(s)") ||
		!strings.Contains(r.stdout, "1 held by several files with equal values, 3 conflict(s)") {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	for _, w := range []string{
		"conflict: scope " + gpuA + ": " + v7 + "fwd float NCHW 32x64x56x56 * 64x64x3x3 pad 1 stride 1\n" +
			"  kept    IMPLICIT_PRECOMP_GEMM 0.1 ms ws 0 B (" + b + ")\n" +
			"  dropped GEMM 0.2 ms ws 0 B (" + a + ")\n" +
			"  because faster measured time (0.1 ms vs 0.2 ms)",
		"kept    6e6577 (3 B) (" + b + ")\n  dropped 6f6c64 (3 B) (" + a + ")\n  because newer entry",
		"kept    FFT 9.5 ms ws 0 B (" + filepath.Join(dir, "c.ccdb") + ")",
		"because the other value has no successful measurement",
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("merge report lacks %q:\n%s", w, r.stdout)
		}
	}

	f, err := cachefile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]cachefile.Entry{}
	for _, e := range f.Entries() {
		got[e.Scope+"|"+string(e.Key)] = e
	}
	if len(got) != 5 {
		t.Fatalf("%d entries", len(got))
	}
	if e := got[gpuA+"|"+string(conv)]; string(e.Value) != string(perf(1, 0.10)) || !e.Used.Equal(recent.Truncate(time.Millisecond)) {
		t.Errorf("faster value not kept, or use time lost: %+v", e)
	}
	if e := got[gpuA+"|blob"]; string(e.Value) != "new" {
		t.Errorf("newer value not kept: %q", e.Value)
	}
	if e := got[gpuA+"|"+string(conv2)]; !e.Used.Equal(recent.Truncate(time.Millisecond)) {
		t.Errorf("equal values: use time %v", e.Used)
	}
	if e := got[gpuB+"|"+string(conv)]; string(e.Value) != string(perf(1, 0.5)) {
		t.Errorf("gpuB entry: %+v", e)
	}

	// The output is never overwritten; inputs must exist.
	r = mustRun(t, exitUsage, nil, "merge", a, b, "-o", out)
	if !strings.Contains(r.stderr, out+" already exists") || !strings.Contains(r.stderr, "convcache import") {
		t.Fatalf("stderr %q", r.stderr)
	}
	r = mustRun(t, exitIO, nil, "merge", a, filepath.Join(dir, "nope.ccdb"), "-o", filepath.Join(dir, "o2.ccdb"))
	if !strings.Contains(r.stderr, "nope.ccdb does not exist") {
		t.Fatalf("stderr %q", r.stderr)
	}
	mustRun(t, exitUsage, nil, "merge", a, b)

	// --scope limits what is merged.
	out3 := filepath.Join(dir, "b-only.ccdb")
	mustRun(t, exitOK, nil, "merge", a, b, "-o", out3, "--scope", gpuB)
	if k := keys(t, out3); len(k) != 1 {
		t.Fatalf("--scope: %v", k)
	}
}

// The newer entry wins when times are equal, and the later file on a tie.
func TestMergeTies(t *testing.T) {
	dir := t.TempDir()
	a, b, out := filepath.Join(dir, "a.ccdb"), filepath.Join(dir, "b.ccdb"), filepath.Join(dir, "out.ccdb")
	at := time.Now().Add(-time.Hour)
	k := torchKey(v7+"fwd", params(2, 2, 2, 2))
	writeFile(t, a, entry("s", k, perf(1, 0.5), at.Add(time.Minute), at), entry("s", []byte("x"), []byte("1"), at, at))
	writeFile(t, b, entry("s", k, perf(2, 0.5), at, at), entry("s", []byte("x"), []byte("2"), at, at))
	mustRun(t, exitOK, nil, "merge", a, b, "-o", out)
	f, _ := cachefile.ReadFile(out)
	for _, e := range f.Entries() {
		switch string(e.Key) {
		case string(k):
			if string(e.Value) != string(perf(1, 0.5)) {
				t.Errorf("equal times: the newer (a) should win")
			}
		case "x":
			if string(e.Value) != "2" {
				t.Errorf("a tie: the later file (b) should win")
			}
		}
	}
}

// cacheFailedPerf is a perf struct whose measurement failed (status 9), with
// a time that would otherwise be the fastest.
func cacheFailedPerf() []byte {
	return cudnn.Perf{Algo: 6, Status: 9, Time: 0.01, Determinism: 1}.Append(nil)
}
