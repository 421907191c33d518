package main

// convcache doctor against stand-ins: the real interposer (and a stand-in
// cuDNN posing as one that serves both paths), the stand-in cuDNN and CUDA
// driver, and stand-in PyTorch installs: this machine's python3, run
// without its site-packages, importing a torch package written here that
// answers the probe as a given torch would and loads the stand-in
// libtorch_cuda.so (tests/doctor), as the real one loads its own. make
// cli-test builds what they need; a plain go test skips them without it.

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// torchSpec is what a stand-in torch answers.
type torchSpec struct {
	version string // "": no torch package at all
	cuda    string // "": a CPU-only build (torch.version.cuda is None)
	cudnn   int    // 0: no cuDNN (torch.backends.cudnn.version() is None)
	lib     string // the libtorch_cuda.so it loads; "": none
}

// fakePython writes an interpreter that runs python3 with the stand-in
// torch of spec (or none) and nothing from site-packages, so that a torch
// installed on this machine is never seen. It is named "python", as a
// venv's is.
func fakePython(t *testing.T, spec torchSpec) string {
	t.Helper()
	py3, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3: the doctor's stand-in interpreters run it")
	}
	dir := t.TempDir()
	pkg := filepath.Join(dir, "site", "torch")
	if spec.version != "" {
		pyval := func(s string) string {
			if s == "" {
				return "None"
			}
			return fmt.Sprintf("%q", s)
		}
		cudnnVersion := "None"
		if spec.cudnn != 0 {
			cudnnVersion = fmt.Sprint(spec.cudnn)
		}
		for name, src := range map[string]string{
			"__init__.py": "# A stand-in torch (cmd/convcache/doctor_test.go).\nimport ctypes\n__version__ = " + pyval(spec.version) +
				"\nif " + pyval(spec.lib) + ":\n    ctypes.CDLL(" + pyval(spec.lib) + ", mode=ctypes.RTLD_GLOBAL)\nfrom . import version, backends, cuda\n",
			"version.py":           "cuda = " + pyval(spec.cuda) + "\n",
			"cuda.py":              "def is_available():\n    return False\n",
			"backends/__init__.py": "from . import cudnn\n",
			"backends/cudnn.py":    "enabled = True\nbenchmark = False\ndef version():\n    return " + cudnnVersion + "\n",
		} {
			p := filepath.Join(pkg, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	py := filepath.Join(dir, "bin", "python")
	os.MkdirAll(filepath.Dir(py), 0o755)
	script := fmt.Sprintf("#!/bin/sh\nPYTHONPATH='%s'\nexport PYTHONPATH\nexec '%s' -S \"$@\"\n", filepath.Join(dir, "site"), py3)
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return py
}

// doctorBuilt returns the build directory with what the doctor's tests use.
func doctorBuilt(t *testing.T) string {
	return builtDir(t, preloadName, libMajorName, "tests/preload/libcudnn.so.9", "tests/preload/libcuda.so.1",
		"tests/preload/preload_prog", "tests/doctor/libtorch_cuda.so")
}

// torchV8 is a stand-in of PyTorch 2.15 on CUDA 13 and cuDNN 9.13.
func torchV8(b string) torchSpec {
	return torchSpec{version: "2.15.0+standin", cuda: "13.0", cudnn: 91300, lib: filepath.Join(b, "tests/doctor/libtorch_cuda.so")}
}

// standinGPU is the environment that shows the doctor the stand-in CUDA
// driver and cuDNN of build b: one GPU (without a device, the scope is a
// problem).
func standinGPU(b string) []string {
	return []string{"CONVCACHE_CUDA_LIBRARY=" + filepath.Join(b, "tests/preload/libcuda.so.1"),
		"CONVCACHE_CUDNN_LIBRARY=" + filepath.Join(b, "tests/preload/libcudnn.so.9")}
}

// doctorRun runs convcache doctor --json with the interposer of build b
// (unless args name one), in a clean environment plus env (plus the
// stand-in GPU unless env names a CUDA library), and returns its report
// and exit status.
func doctorRun(t *testing.T, b string, env []string, args ...string) (doctorReport, result) {
	t.Helper()
	flags := []string{"doctor", "--json"}
	if !slices.Contains(args, "--preload") {
		flags = append(flags, "--preload", filepath.Join(b, preloadName))
	}
	cmd := exec.Command(binary, append(flags, args...)...)
	for _, kv := range cleanEnv(t) {
		if !strings.HasPrefix(kv, torchV7Var+"=") && !strings.HasPrefix(kv, "LD_PRELOAD=") && !strings.HasPrefix(kv, "STANDIN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "CONVCACHE_CUDA_LIBRARY=") }) {
		cmd.Env = append(cmd.Env, standinGPU(b)...)
	}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := result{so.String(), se.String(), cmd.ProcessState.ExitCode()}
	if err != nil && r.code <= 0 {
		t.Fatalf("convcache %v: %v", args, err)
	}
	var rep doctorReport
	decodeJSON(t, r.stdout, &rep)
	if (rep.Problems > 0) != (r.code == exitDamage) || r.code != exitOK && r.code != exitDamage {
		t.Fatalf("convcache doctor %v: exit %d with %d problems\n%s\n%s", args, r.code, rep.Problems, r.stdout, r.stderr)
	}
	return rep, r
}

// find returns the findings of one check.
func (r *doctorReport) find(check string) []finding {
	var out []finding
	for _, f := range r.Findings {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out
}

// one returns the one finding of a check, whose status must be status.
func (r *doctorReport) one(t *testing.T, check, status string, contains ...string) finding {
	t.Helper()
	fs := r.find(check)
	if len(fs) != 1 {
		t.Fatalf("%d findings %q: %+v", len(fs), check, r.Findings)
	}
	f := fs[0]
	if f.Status != status || f.Advice == "" {
		t.Fatalf("finding %q: %+v, want status %s", check, f, status)
	}
	for _, c := range contains {
		if !strings.Contains(f.Summary+" | "+f.Advice, c) {
			t.Fatalf("finding %q lacks %q: %+v", check, c, f)
		}
	}
	return f
}

// with returns the finding of a check whose summary contains what, with
// status status.
func (r *doctorReport) with(t *testing.T, check, status, what string) finding {
	t.Helper()
	for _, f := range r.find(check) {
		if strings.Contains(f.Summary, what) {
			if f.Status != status || f.Advice == "" {
				t.Fatalf("finding %q: %+v, want status %s", check, f, status)
			}
			return f
		}
	}
	t.Fatalf("no finding %q says %q: %+v", check, what, r.Findings)
	return finding{}
}

// exports reports whether the ELF file defines every one of names: an
// independent reading of what the doctor reads, so that the tests hold
// before and after the interposer serves the v8 path.
func exports(t *testing.T, path string, names []string) bool {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && slices.Contains(names, s.Name) {
			n++
		}
	}
	return n == len(names)
}

func TestDoctorNoTorch(t *testing.T) {
	b := doctorBuilt(t)
	py := fakePython(t, torchSpec{})
	rep, _ := doctorRun(t, b, nil, "--python", py)
	rep.one(t, "torch", statusNote, "has no torch", "--python")
	rep.one(t, "interposer", statusOK, "serves PyTorch's v7 path")
	for _, c := range []string{"path", "benchmark", "bindings"} {
		if fs := rep.find(c); len(fs) != 0 {
			t.Errorf("a %s finding without torch: %+v", c, fs)
		}
	}
	if rep.Torch == nil || !rep.Torch.TorchMissing || rep.Problems != 0 {
		t.Fatalf("%+v", rep)
	}

	// An interpreter that does not exist, named by the user, is a problem;
	// so is an interposer that cannot be found.
	rep, _ = doctorRun(t, b, nil, "--python", filepath.Join(t.TempDir(), "python"))
	rep.one(t, "python", statusProblem)
	rep, _ = doctorRun(t, b, nil, "--python", py, "--preload", filepath.Join(t.TempDir(), preloadName))
	rep.one(t, "interposer", statusProblem, "no such file")
	// A program that is not a Python one gets no PyTorch checks.
	rep, _ = doctorRun(t, b, nil, "--", filepath.Join(b, "tests/preload/preload_prog"), "run", "out.txt")
	rep.one(t, "python", statusNote, "preload_prog is not a Python program")
	if rep.Torch != nil || rep.Python != "" {
		t.Fatalf("%+v", rep)
	}

	// The text form: each finding with its advice, and the verdict.
	cmd := exec.Command(binary, "doctor", "--python", py, "--preload", filepath.Join(b, preloadName))
	cmd.Env = append(cleanEnv(t), standinGPU(b)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("doctor without --json: %v\n%s", err, out)
	}
	for _, w := range []string{"[note]    torch: " + py + " (Python ", "\n          advice: give --python", "\nNothing stands in the way"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("text lacks %q:\n%s", w, out)
		}
	}
}

// PyTorch's default path is v8. Whether convcache run serves it is read
// from the interposer's exports: today's does not (a problem, with
// --torch-v7 as the advice), one that exports the six backend functions
// does (here the stand-in cuDNN, which defines them, posing as one).
func TestDoctorTorchV8(t *testing.T) {
	b := doctorBuilt(t)
	py := fakePython(t, torchV8(b))
	standinCudnn := filepath.Join(b, "tests/preload/libcudnn.so.9")
	rep, _ := doctorRun(t, b, nil, "--python", py)
	rep.one(t, "torch", statusOK, "torch 2.15.0+standin (CUDA 13.0), cuDNN 91300 (", "libcudnn.so.9)", "it sees no GPU here")
	if rep.Path != "v8" {
		t.Fatalf("path %q", rep.Path)
	}
	same := sameFiles{}
	if exports(t, filepath.Join(b, preloadName), pathFunctions["v8"]) {
		rep.one(t, "path", statusOK, "v8 path (PyTorch's default")
		rep.one(t, "bindings", statusOK, "6 references to the v8 functions all bind to the interposer")
	} else {
		rep.one(t, "path", statusProblem, "v8 path (PyTorch's default", "does not serve it", "convcache run --torch-v7")
		rep.one(t, "bindings", statusNote, "bind to cuDNN")
		if len(rep.Bindings) != 6 {
			t.Fatalf("bindings %+v", rep.Bindings)
		}
		for _, bd := range rep.Bindings {
			if len(bd.To) != 1 || !same.is(bd.To[0], standinCudnn) || !strings.HasPrefix(bd.Function, "cudnnBackend") {
				t.Errorf("%+v, want a binding to %s", bd, standinCudnn)
			}
		}
	}
	rep.one(t, "benchmark", statusWarning, "must set torch.backends.cudnn.benchmark = True", "PyTorch's default is False")

	// An interposer that exports the backend functions serves v8: the
	// stand-in cuDNN defines all twelve, with the library beside it.
	dir := t.TempDir()
	both := filepath.Join(dir, preloadName)
	data, err := os.ReadFile(standinCudnn)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(both, data, 0o755)
	os.Symlink(filepath.Join(b, libMajorName), filepath.Join(dir, libMajorName))
	os.Symlink(filepath.Join(b, "tests/preload/libcuda.so.1"), filepath.Join(dir, "libcuda.so.1"))
	rep, r := doctorRun(t, b, nil, "--python", py, "--preload", both)
	rep.one(t, "interposer", statusOK, "v7 path (the cudnnFind* functions) and its v8 path")
	rep.one(t, "path", statusOK, "caches its engine choices")
	rep.one(t, "bindings", statusOK, "6 references to the v8 functions all bind to the interposer")
	for _, bd := range rep.Bindings {
		if len(bd.To) != 1 || !same.is(bd.To[0], both) {
			t.Errorf("%+v, want a binding to %s", bd, both)
		}
	}
	if rep.Problems != 0 || r.code != exitOK || !rep.Serves["v7"] || !rep.Serves["v8"] {
		t.Fatalf("exit %d: %+v", r.code, rep)
	}
}

// Under TORCH_CUDNN_V8_API_DISABLED=1 (or --torch-v7) PyTorch takes its v7
// path, which the interposer serves: every find function torch imports
// binds to it, as make torch-check checks with the real torch.
func TestDoctorTorchV7(t *testing.T) {
	b := doctorBuilt(t)
	py := fakePython(t, torchV8(b))
	interposer := filepath.Join(b, preloadName)
	for _, run := range []struct {
		env  []string
		args []string
		why  string
	}{
		{[]string{torchV7Var + "=1"}, nil, torchV7Var + "=1 in the environment"},
		{nil, []string{"--torch-v7"}, "--torch-v7 sets " + torchV7Var + "=1"},
	} {
		rep, r := doctorRun(t, b, run.env, append([]string{"--python", py}, run.args...)...)
		if rep.Path != "v7" || r.code != exitOK || rep.Problems != 0 {
			t.Fatalf("%v %v: exit %d, path %q\n%s", run.env, run.args, r.code, rep.Path, r.stdout)
		}
		rep.one(t, "path", statusOK, "v7 path ("+run.why, "caches its benchmarks", "compare a warm run")
		rep.one(t, "bindings", statusOK, "libtorch_cuda.so's 6 references to the v7 functions all bind to the interposer")
		same := sameFiles{}
		for _, bd := range rep.Bindings {
			if len(bd.To) != 1 || !same.is(bd.To[0], interposer) || !strings.HasPrefix(bd.Function, "cudnnFind") {
				t.Errorf("%+v, want a binding to %s", bd, interposer)
			}
		}
	}
	// PyTorch takes only 1: any other value leaves it on v8, with a warning.
	rep, _ := doctorRun(t, b, []string{torchV7Var + "=true"}, "--python", py)
	if fs := rep.find("path"); len(fs) != 2 || rep.Path != "v8" || fs[0].Status != statusWarning ||
		!strings.Contains(fs[0].Summary, torchV7Var+"=true is ignored by PyTorch") || !strings.Contains(fs[1].Summary, "v8 path") {
		t.Fatalf("%+v", rep.Findings)
	}
}

// Given the program, the doctor reads its script for cudnn.benchmark (and
// says that this is a heuristic); without it, it says the program must set
// it. The interpreter is the command's own.
func TestDoctorBenchmark(t *testing.T) {
	b := doctorBuilt(t)
	py := fakePython(t, torchV8(b))
	dir := t.TempDir()
	for _, c := range []struct {
		name, src, status string
		contains          []string
	}{
		{"unset", "import torch\nmodel = torch.nn.Conv2d(3, 8, 3)\n", statusProblem,
			[]string{"does not set torch.backends.cudnn.benchmark", "a heuristic", "PyTorch's default is False"}},
		{"set", "import torch\n\ntorch.backends.cudnn.benchmark = True  # speed\n", statusOK,
			[]string{"sets torch.backends.cudnn.benchmark = True (line 3; read from the script, a heuristic"}},
		{"false", "import torch\ntorch.backends.cudnn.benchmark=False\n", statusProblem,
			[]string{"= False (line 2", "nothing is cached"}},
		{"expression", "from torch.backends import cudnn\ncudnn.benchmark = args.benchmark\n", statusWarning,
			[]string{"cannot evaluate: line 2 (args.benchmark)"}},
		{"commented", "# torch.backends.cudnn.benchmark = True\nx = '# cudnn.benchmark = True'\nassert torch.backends.cudnn.benchmark == True\n", statusProblem,
			[]string{"does not set"}},
	} {
		script := filepath.Join(dir, c.name+".py")
		os.WriteFile(script, []byte(c.src), 0o644)
		rep, _ := doctorRun(t, b, []string{torchV7Var + "=1"}, "--", py, "-u", script, "--epochs", "3")
		if rep.Python != py {
			t.Errorf("%s: the interpreter is %q, want the command's %q", c.name, rep.Python, py)
		}
		rep.one(t, "benchmark", c.status, append([]string{script}, c.contains...)...)
	}
	// python -c CODE: the code is the script.
	rep, _ := doctorRun(t, b, []string{torchV7Var + "=1"}, "--", py, "-c", "import torch; torch.backends.cudnn.benchmark = True")
	rep.one(t, "benchmark", statusOK, "the -c code sets torch.backends.cudnn.benchmark = True (line 1")

	// A script that puts torch on v7 itself.
	script := filepath.Join(dir, "v7.py")
	os.WriteFile(script, []byte("import os\nos.environ[\"TORCH_CUDNN_V8_API_DISABLED\"] = \"1\"\nimport torch\ntorch.backends.cudnn.benchmark = True\n"), 0o644)
	rep, r := doctorRun(t, b, nil, "--", py, script)
	if rep.Path != "v7" || r.code != exitOK {
		t.Fatalf("exit %d, path %q:\n%s", r.code, rep.Path, r.stdout)
	}
	rep.one(t, "path", statusOK, "v7.py sets TORCH_CUDNN_V8_API_DISABLED=1 at line 2 (read from the script")
}

// The cache file and the scope: not created yet; a scope with entries (by
// CONVCACHE_SCOPE, and by the stand-in GPU's fingerprint read through the
// cuDNN torch loads); a file that is not a cache file; the mode off.
func TestDoctorCache(t *testing.T) {
	b := doctorBuilt(t)
	py := fakePython(t, torchV8(b))
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "cache.ccdb")
	v7 := []string{torchV7Var + "=1"}

	rep, _ := doctorRun(t, b, v7, "--python", py, "--path", path)
	rep.one(t, "cache", statusOK, path+" has not been created yet", "the first run that benchmarks creates it")
	if rep.CachePath != path {
		t.Fatalf("cache path %q", rep.CachePath)
	}

	// CONVCACHE_SCOPE names the scope; the default file is CONVCACHE_PATH.
	liveCache(t, path, "my-scope", []byte("k1"), []byte("v1"), []byte("k2"), []byte("v2"), []byte("k3"), []byte("v3"))
	liveCache(t, path, "other", []byte("k1"), []byte("v1"))
	rep, _ = doctorRun(t, b, append([]string{"CONVCACHE_SCOPE=my-scope", "CONVCACHE_PATH=" + path}, v7...), "--python", py)
	rep.one(t, "cache", statusOK, path+": 4 entries in 2 scopes")
	rep.one(t, "scope", statusOK, "CONVCACHE_SCOPE=my-scope names the scope of every device: 3 entries in the cache file")

	// The stand-in GPU, fingerprinted with the cuDNN torch loaded (the
	// stand-in's), as the library in the program would.
	cuda := "CONVCACHE_CUDA_LIBRARY=" + filepath.Join(b, "tests/preload/libcuda.so.1")
	r := mustRun(t, exitOK, []string{cuda, "CONVCACHE_CUDNN_LIBRARY=" + filepath.Join(b, "tests/preload/libcudnn.so.9")}, "scope", "--device", "0")
	scope := strings.TrimSpace(r.stdout)
	rep, _ = doctorRun(t, b, append([]string{cuda}, v7...), "--python", py, "--path", path)
	f := rep.with(t, "scope", statusOK, "device 0: Standin GPU 0 (compute 9.0, 132 SMs), CUDA driver 13000, cuDNN 91300: no entries in the cache file yet")
	if !strings.Contains(f.Advice, "the first run benchmarks each convolution once") {
		t.Fatalf("%+v", f)
	}
	liveCache(t, path, scope, []byte("k1"), []byte("v1"), []byte("k2"), []byte("v2"))
	rep, r2 := doctorRun(t, b, append([]string{cuda}, v7...), "--python", py, "--path", path)
	f = rep.with(t, "scope", statusOK, "device 0: Standin GPU 0 (compute 9.0, 132 SMs), CUDA driver 13000, cuDNN 91300: 2 entries in the cache file")
	if !strings.Contains(f.Advice, "a run finds these results") {
		t.Fatalf("%+v", f)
	}
	if r2.code != exitOK {
		t.Fatalf("exit %d:\n%s", r2.code, r2.stdout)
	}

	// Not a cache file: a problem, said once.
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("not a cache\n"), 0o600)
	rep, _ = doctorRun(t, b, v7, "--python", py, "--path", notes)
	rep.one(t, "cache", statusProblem, notes+" is not a convcache file (unknown magic number)", "move it aside")

	// The mode off caches nothing.
	rep, _ = doctorRun(t, b, append([]string{"CONVCACHE_DISABLE=1"}, v7...), "--python", py, "--path", path)
	rep.one(t, "mode", statusProblem, "finds and stores nothing")
}

// The real PyTorch wheel that make torch brings (build/torch/venv, ~3 GB):
// make torch-check runs this test with CONVCACHE_TEST_TORCH_VENV set; a
// plain go test runs it when ../../build/torch/venv exists, and skips it
// otherwise. On v7 (--torch-v7) every find function libtorch_cuda.so
// imports binds to the interposer, as tests/torch/run.sh checks; on v8 the
// doctor's verdict follows what the interposer exports.
func TestDoctorRealTorch(t *testing.T) {
	venv := os.Getenv("CONVCACHE_TEST_TORCH_VENV")
	required := venv != ""
	if !required {
		venv, _ = filepath.Abs("../../build/torch/venv")
	}
	py := filepath.Join(venv, "bin", "python")
	if !isFile(py) {
		if required {
			t.Fatalf("CONVCACHE_TEST_TORCH_VENV=%s has no bin/python", venv)
		}
		t.Skipf("%s is not there: make torch installs PyTorch's wheel (~3 GB) and make torch-check runs this test", venv)
	}
	b := builtDir(t, preloadName, libMajorName)
	interposer := filepath.Join(b, preloadName)

	rep, r := doctorRun(t, b, nil, "--python", py, "--torch-v7")
	tp := rep.Torch
	if tp == nil || !strings.HasPrefix(tp.Torch, "2.") || tp.CuDNN < 90000 || tp.CUDA == "" || filepath.Base(tp.TorchCUDA) != "libtorch_cuda.so" {
		t.Fatalf("the probe of the real torch: %+v\n%s\n%s", tp, r.stdout, r.stderr)
	}
	rep.one(t, "path", statusOK, "v7 path")
	rep.one(t, "bindings", statusOK, "all bind to the interposer")
	same := sameFiles{}
	for _, bd := range rep.Bindings {
		if len(bd.To) != 1 || !same.is(bd.To[0], interposer) {
			t.Errorf("%+v, want a binding to %s", bd, interposer)
		}
	}
	t.Logf("torch %s, CUDA %s, cuDNN %d; v7: %d references bind to the interposer", tp.Torch, tp.CUDA, tp.CuDNN, len(rep.Bindings))

	rep, _ = doctorRun(t, b, nil, "--python", py)
	if rep.Path != "v8" {
		t.Fatalf("path %q", rep.Path)
	}
	if exports(t, interposer, pathFunctions["v8"]) {
		rep.one(t, "path", statusOK, "v8 path")
		rep.one(t, "bindings", statusOK, "all bind to the interposer")
	} else {
		rep.one(t, "path", statusProblem, "v8 path", "--torch-v7")
		rep.one(t, "bindings", statusNote, "bind to cuDNN")
	}
}

// "Nothing stands in the way" only when nothing does: no CUDA driver (no
// device fingerprint), a script that does not set benchmark mode (read
// even when the interpreter has no torch), a cache path that cannot be used
// (a directory, from CONVCACHE_PATH or --path: a finding, not exit 2) are
// each a problem with advice, exit 1; a bad flag stays exit 2.
func TestDoctorHonest(t *testing.T) {
	b := doctorBuilt(t)
	torch := fakePython(t, torchV8(b))
	noTorch := fakePython(t, torchSpec{})
	dir := t.TempDir()
	unset := filepath.Join(dir, "train.py")
	os.WriteFile(unset, []byte("import torch\nmodel = torch.nn.Conv2d(3, 8, 3)\n"), 0o644)
	set := filepath.Join(dir, "ok.py")
	os.WriteFile(set, []byte("import torch\ntorch.backends.cudnn.benchmark = True\n"), 0o644)
	v7 := torchV7Var + "=1"
	noDriver := "CONVCACHE_CUDA_LIBRARY=" + filepath.Join(dir, "none", "libcuda.so.1")
	path := "CONVCACHE_PATH=" + filepath.Join(dir, "c.ccdb")

	text := func(env []string, args ...string) result {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"doctor", "--preload", filepath.Join(b, preloadName)}, args...)...)
		cmd.Env = append(cleanEnv(t), env...)
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		cmd.Run()
		return result{so.String(), se.String(), cmd.ProcessState.ExitCode()}
	}
	for _, c := range []struct {
		name, check, says string
		env               []string
		args              []string
	}{
		{"no driver", "scope", "no device fingerprint", []string{v7, path, noDriver}, []string{"--", torch, set}},
		{"no benchmark, torch here", "benchmark", "does not set torch.backends.cudnn.benchmark", append([]string{v7, path}, standinGPU(b)...), []string{"--", torch, unset}},
		{"no benchmark, no torch here", "benchmark", "does not set torch.backends.cudnn.benchmark", append([]string{path}, standinGPU(b)...), []string{"--", noTorch, unset}},
		{"a directory as CONVCACHE_PATH", "cache", "is a directory", append([]string{v7, "CONVCACHE_PATH=" + dir}, standinGPU(b)...), []string{"--", torch, set}},
		{"a directory as --path", "cache", "is a directory", append([]string{v7}, standinGPU(b)...), []string{"--path", dir, "--", torch, set}},
		{"a file as a directory", "cache", "is not a directory", append([]string{v7, "CONVCACHE_PATH=" + filepath.Join(set, "c.ccdb")}, standinGPU(b)...), []string{"--", torch, set}},
	} {
		rep, r := doctorRun(t, b, c.env, c.args...)
		f := rep.with(t, c.check, statusProblem, c.says)
		if r.code != exitDamage || rep.Problems != 1 || f.Advice == "" {
			t.Errorf("%s: exit %d, %d problems, want exit 1 with one: %+v", c.name, r.code, rep.Problems, rep.Findings)
		}
		tr := text(c.env, c.args...)
		if tr.code != exitDamage || strings.Contains(tr.stdout, "Nothing stands in the way") || !strings.Contains(tr.stdout, "1 problem stands in the way") {
			t.Errorf("%s: exit %d\n%s%s", c.name, tr.code, tr.stdout, tr.stderr)
		}
	}
	// All well: exit 0, and the verdict says so.
	tr := text(append([]string{v7, path}, standinGPU(b)...), "--", torch, set)
	if tr.code != exitOK || !strings.Contains(tr.stdout, "Nothing stands in the way") {
		t.Errorf("all well: exit %d\n%s%s", tr.code, tr.stdout, tr.stderr)
	}
	// The doctor's own usage errors stay exit 2.
	if tr := text(nil, "--no-such-flag"); tr.code != exitUsage {
		t.Errorf("a bad flag: exit %d", tr.code)
	}
}
