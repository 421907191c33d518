package main

// Tests against what make builds: the real interposer with the stand-in
// cuDNN, and the demo. make cli-test builds them and runs these tests with
// CONVCACHE_TEST_BUILD set; a plain go test runs them when ../../build
// holds them, and skips them otherwise.

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// builtDir returns the build directory, which must hold files.
func builtDir(t *testing.T, files ...string) string {
	t.Helper()
	dir := os.Getenv("CONVCACHE_TEST_BUILD")
	required := dir != ""
	if !required {
		dir, _ = filepath.Abs("../../build")
	}
	for _, f := range files {
		if !isFile(filepath.Join(dir, f)) {
			if required {
				t.Fatalf("%s is missing from CONVCACHE_TEST_BUILD=%s", f, dir)
			}
			t.Skipf("%s is not built; make cli-test builds it and runs this test", filepath.Join(dir, f))
		}
	}
	return dir
}

// standinEnv is a clean environment for the stand-in cuDNN's programs.
func standinEnv(t *testing.T, env ...string) []string {
	var out []string
	for _, kv := range runEnv(t) {
		if !strings.HasPrefix(kv, "STANDIN_") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

var findsLine = regexp.MustCompile(`(?m)^finds (\d+)$`)

// convcache run -- preload_prog: the first run benchmarks every problem,
// the second reaches cuDNN's find zero times and returns the same results.
func TestRunInterposerCaches(t *testing.T) {
	b := builtDir(t, preloadName, libMajorName, "tests/preload/preload_prog", "tests/preload/libcudnn.so.9", "tests/preload/libcuda.so.1")
	dir := t.TempDir()
	prog := filepath.Join(b, "tests/preload/preload_prog")
	finds := func(report string, env ...string) string {
		t.Helper()
		cmd := exec.Command(binary, "run", "--preload", filepath.Join(b, preloadName), "--path", filepath.Join(dir, "c.ccdb"),
			"--", prog, "run", filepath.Join(dir, report))
		cmd.Env = standinEnv(t, env...)
		out, err := cmd.Output()
		m := findsLine.FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("convcache run -- preload_prog: %v\n%s", err, out)
		}
		return string(m[1])
	}
	if n := finds("r1.txt"); n == "0" {
		t.Fatal("the first run reached cuDNN's find 0 times: nothing to cache")
	}
	// An LD_PRELOAD set already is kept, and the interposer still works.
	if n := finds("r2.txt", "LD_PRELOAD="+filepath.Join(b, "tests/preload/libcuda.so.1")); n != "0" {
		t.Fatalf("the second run reached cuDNN's find %s times, want 0", n)
	}
	r1, _ := os.ReadFile(filepath.Join(dir, "r1.txt"))
	r2, _ := os.ReadFile(filepath.Join(dir, "r2.txt"))
	if len(r1) == 0 || string(r1) != string(r2) {
		t.Fatalf("the cached results differ from the measured ones:\n%s\n%s", r1, r2)
	}
	// What it stored lists as cuDNN results.
	es := ls(t, nil, filepath.Join(dir, "c.ccdb"))
	if len(es) == 0 {
		t.Fatal("nothing stored")
	}
	for _, e := range es {
		if e.Layout != layoutFind || e.Op == "" || e.TimeMs == nil || strings.Contains(e.Value, "algo(") {
			t.Errorf("an interposer entry: %+v", e)
		}
	}
}

// convcache ls on the demo's own cache names the algorithm chosen for
// every shape, as the demo itself counts them: its CPU autotuner stores its
// own 48-byte AlgoChoice under "demo.conv2d.fwd" (demo.go decodes it), its
// cuDNN path stores cuDNN's perf structs under "demo.cudnn.fwd". Each run
// measures every shape (--cold) into a file of its own, so the entries are
// the distinct shapes the demo reports.
func TestLsDemoCache(t *testing.T) {
	b := builtDir(t, "examples/demo", "tests/preload/libcuda.so.1", "tests/preload/libcudnn.so.9")
	dir := t.TempDir()
	gpu := []string{"CONVCACHE_CUDA_LIBRARY=" + filepath.Join(b, "tests/preload/libcuda.so.1"),
		"CONVCACHE_CUDNN_LIBRARY=" + filepath.Join(b, "tests/preload/libcudnn.so.9")}
	chosen := regexp.MustCompile(`(?m)^algorithms chosen for the (\d+) distinct shapes: (.*)$`)
	for _, run := range []struct {
		name  string
		flags []string
		env   []string
	}{
		{"demo.conv2d.fwd", []string{"--cpu"}, nil},
		{"demo.cudnn.fwd", nil, gpu},
	} {
		path := filepath.Join(dir, run.name+".ccdb")
		cmd := exec.Command(filepath.Join(b, "examples/demo"), append([]string{"--quick", "--cold"}, run.flags...)...)
		cmd.Env = append(standinEnv(t, "CONVCACHE_PATH="+path, "TMPDIR="+dir), run.env...)
		out, err := cmd.CombinedOutput()
		m := chosen.FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("demo %v: %v\n%s", cmd.Args[1:], err, out)
		}
		// What the demo says it chose: "direct 2, im2col+gemm 20, ...".
		want := map[string]int{}
		for _, part := range strings.Split(string(m[2]), ", ") {
			name, n, _ := strings.Cut(part, " ")
			if c, _ := strconv.Atoi(n); c > 0 {
				want[name] = c
			}
		}
		got := map[string]int{}
		es := ls(t, nil, path)
		for _, e := range es {
			if e.Name != run.name || e.TimeMs == nil || strings.Contains(e.Value, "algo(") || strings.Contains(e.Value, "(48 B)") {
				t.Errorf("%s: an entry not decoded: %+v", run.name, e)
			}
			algo, _, _ := strings.Cut(e.Value, " ")
			got[algo]++
		}
		if strconv.Itoa(len(es)) != string(m[1]) || !maps.Equal(got, want) {
			t.Errorf("%s: ls names %d entries %v; the demo chose for %s shapes %v", run.name, len(es), got, m[1], want)
		}
	}

	// dump shows every candidate of the demo's choice, and its JSON the
	// decoded fields.
	r := mustRun(t, exitOK, nil, "dump", filepath.Join(dir, "demo.conv2d.fwd.ccdb"))
	for _, w := range []string{"value     the demo's choice: ", "              direct ", " (chosen)\n"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("dump lacks %q:\n%.2000s", w, r.stdout)
		}
	}
	var full []entryJSON
	decodeJSON(t, mustRun(t, exitOK, nil, "dump", "--json", filepath.Join(dir, "demo.conv2d.fwd.ccdb")).stdout, &full)
	for _, e := range full {
		if c := e.Demo; c == nil || c.TimesMs[c.Algo] != c.TimeMs || c.TimesMs["direct"] <= 0 {
			t.Errorf("dump --json: %+v", e)
			break
		}
	}
}
