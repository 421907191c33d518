package main

// Tests against what make builds: the real interposer with the stand-in
// cuDNN, and the demo. make cli-test builds them and runs these tests with
// CONVCACHE_TEST_BUILD set; a plain go test runs them when ../../build
// holds them, and skips them otherwise.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// convcache ls on the demo's own cache shows no decoded nonsense: the
// demo's CPU autotuner stores 48-byte values that are not perf structs
// under "demo.conv2d.fwd" (hex), its cuDNN path stores perf structs under
// "demo.cudnn.fwd" (decoded).
func TestLsDemoCache(t *testing.T) {
	b := builtDir(t, "examples/demo", "tests/preload/libcuda.so.1", "tests/preload/libcudnn.so.9")
	dir := t.TempDir()
	path := filepath.Join(dir, "demo.ccdb")
	env := standinEnv(t, "CONVCACHE_PATH="+path, "TMPDIR="+dir)
	gpu := []string{"CONVCACHE_CUDA_LIBRARY=" + filepath.Join(b, "tests/preload/libcuda.so.1"),
		"CONVCACHE_CUDNN_LIBRARY=" + filepath.Join(b, "tests/preload/libcudnn.so.9")}
	for _, run := range []struct {
		args []string
		env  []string
	}{
		{[]string{"--quick", "--cold", "--cpu", "--report", filepath.Join(dir, "cpu.txt")}, env},
		{[]string{"--quick", "--cold", "--report", filepath.Join(dir, "gpu.txt")}, append(env, gpu...)},
	} {
		cmd := exec.Command(filepath.Join(b, "examples/demo"), run.args...)
		cmd.Env = run.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("demo %v: %v\n%s", run.args, err, out)
		}
	}

	count := map[string]int{}
	for _, e := range ls(t, nil, path) {
		count[e.Name]++
		switch e.Name {
		case "demo.conv2d.fwd":
			if e.Op != "" || e.TimeMs != nil || !strings.HasSuffix(e.Value, "... (48 B)") {
				t.Errorf("a CPU autotuner entry decoded as a perf struct: %+v", e)
			}
		case "demo.cudnn.fwd":
			if e.Op != "fwd" || e.TimeMs == nil || strings.Contains(e.Value, "algo(") {
				t.Errorf("a cuDNN entry not decoded: %+v", e)
			}
		default:
			t.Errorf("an entry the demo does not write: %+v", e)
		}
	}
	if count["demo.conv2d.fwd"] == 0 || count["demo.cudnn.fwd"] == 0 {
		t.Fatalf("entries by name: %v", count)
	}
	r := mustRun(t, exitOK, nil, "ls", path)
	hexValue := regexp.MustCompile(`^  demo\.conv2d\.fwd float NCHW .* -> [0-9a-f]{64}\.\.\. \(48 B\)$`)
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "  demo.conv2d.fwd") && !hexValue.MatchString(line) {
			t.Errorf("convcache ls decoded the demo's own value: %q", line)
		}
	}
	if strings.Contains(r.stdout, "math(") || strings.Contains(r.stdout, "algo(") {
		t.Errorf("convcache ls shows decoded nonsense:\n%s", r.stdout)
	}
}
