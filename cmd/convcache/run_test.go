package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// childEnv makes the test binary a command for convcache run to start
// (TestMain hands over to child): "signals" waits for a signal and exits
// with a code that names it.
const childEnv = "CONVCACHE_TEST_CHILD"

// forwarded are the signals convcache run must pass to its command.
var forwarded = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// child runs as the command: it catches the signals, says "ready" (only
// then can the test send one, so nothing depends on timing), and exits
// with 100 + the number of the first signal it gets.
func child(mode string) int {
	if mode != "signals" {
		fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
		return 1
	}
	ch := make(chan os.Signal, 1)
	for _, s := range forwarded {
		signal.Notify(ch, s)
	}
	fmt.Println("ready")
	s := (<-ch).(syscall.Signal)
	fmt.Printf("got %v\n", s)
	return 100 + int(s)
}

// fakePreload makes a directory that convcache run accepts as the
// interposer's: libconvcache_preload.so and libconvcache.so.1. The
// "interposer" is a link to the C library this test process runs with:
// a real shared object, harmless to preload, so the tests of the launcher
// need nothing that make builds.
func fakePreload(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps")
	}
	var libc string
	for _, line := range strings.Split(string(maps), "\n") {
		if f := strings.Fields(line); len(f) == 6 && strings.Contains(filepath.Base(f[5]), "libc.so") {
			libc = f[5]
			break
		}
	}
	if libc == "" {
		t.Skip("this test binary is not linked against libc")
	}
	p := filepath.Join(dir, preloadName)
	if err := os.Symlink(libc, p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, libMajorName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runEnv is cleanEnv without LD_PRELOAD and TORCH_* variables, plus env.
func runEnv(t *testing.T, env ...string) []string {
	var out []string
	for _, kv := range cleanEnv(t) {
		if !strings.HasPrefix(kv, "LD_PRELOAD=") && !strings.HasPrefix(kv, "TORCH_") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

// variables runs `convcache run ARGS -- env` and returns the command's
// environment.
func variables(t *testing.T, env []string, args ...string) (map[string]string, result) {
	t.Helper()
	cmd := exec.Command(binary, append(append([]string{"run"}, args...), "--", "env")...)
	cmd.Env = env
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("convcache run %v -- env: %v\n%s", args, err, se.String())
	}
	vars := map[string]string{}
	for _, line := range strings.Split(so.String(), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	return vars, result{so.String(), se.String(), 0}
}

func TestRunEnvironment(t *testing.T) {
	pre := fakePreload(t)
	dir := t.TempDir()

	// The interposer alone, and after what LD_PRELOAD holds already.
	vars, r := variables(t, runEnv(t), "--preload", pre)
	if vars["LD_PRELOAD"] != pre || r.stderr != "" {
		t.Fatalf("LD_PRELOAD %q, stderr %q", vars["LD_PRELOAD"], r.stderr)
	}
	for _, cur := range []string{"/opt/a.so", "/opt/a.so /opt/b.so", "/opt/a.so:/opt/b.so"} {
		vars, _ := variables(t, runEnv(t, "LD_PRELOAD="+cur), "--preload", pre)
		if vars["LD_PRELOAD"] != cur+":"+pre {
			t.Errorf("LD_PRELOAD=%q became %q, want it kept and the interposer appended", cur, vars["LD_PRELOAD"])
		}
	}
	cur := "/opt/a.so:" + pre
	if vars, _ := variables(t, runEnv(t, "LD_PRELOAD="+cur), "--preload", pre); vars["LD_PRELOAD"] != cur {
		t.Errorf("an LD_PRELOAD naming the interposer became %q", vars["LD_PRELOAD"])
	}

	// Flags set variables; the cache path is made absolute.
	cmd := []string{"--preload", pre, "--path", "rel/c.ccdb", "--scope", "my scope", "--tag", "torch-2.9",
		"--mode", "RO", "--verbose", "--torch-v7"}
	env := runEnv(t, "CONVCACHE_PATH=/elsewhere.ccdb", "CONVCACHE_MODE=rw")
	c := exec.Command(binary, append(append([]string{"run"}, cmd...), "--", "env")...)
	c.Env, c.Dir = env, dir
	var so, se strings.Builder
	c.Stdout, c.Stderr = &so, &se
	if err := c.Run(); err != nil {
		t.Fatalf("%v: %s", err, se.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(so.String(), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			if _, dup := got[k]; dup {
				t.Errorf("%s set twice", k)
			}
			got[k] = v
		}
	}
	for k, v := range map[string]string{
		"CONVCACHE_PATH": filepath.Join(dir, "rel/c.ccdb"), "CONVCACHE_SCOPE": "my scope", "CONVCACHE_TAG": "torch-2.9",
		"CONVCACHE_MODE": "ro", "CONVCACHE_PRELOAD_LOG": "1", "CONVCACHE_VERBOSE": "1", "TORCH_CUDNN_V8_API_DISABLED": "1",
	} {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	if lines := strings.Split(strings.TrimSpace(se.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "convcache run: --torch-v7 sets TORCH_CUDNN_V8_API_DISABLED=1") {
		t.Errorf("--torch-v7 note: %q", se.String())
	}
	// Without flags, the environment's own values pass through.
	if vars, _ := variables(t, env, "--preload", pre); vars["CONVCACHE_PATH"] != "/elsewhere.ccdb" || vars["CONVCACHE_MODE"] != "rw" ||
		vars["TORCH_CUDNN_V8_API_DISABLED"] != "" {
		t.Errorf("the environment was changed: %v", vars)
	}
	// Flags after COMMAND are the command's.
	c = exec.Command(binary, "run", "--preload", pre, "echo", "--mode", "x")
	c.Env = runEnv(t)
	if out, err := c.Output(); err != nil || string(out) != "--mode x\n" {
		t.Errorf("echo --mode x: %q, %v", out, err)
	}
}

// The command's exit status is convcache run's, a death by signal
// included (a shell reports 128+N); failures to start have env(1)'s codes.
func TestRunExitStatus(t *testing.T) {
	pre := fakePreload(t)
	env := runEnv(t)
	if r := mustRun(t, 7, env, "run", "--preload", pre, "--", "sh", "-c", "exit 7"); r.stderr != "" {
		t.Errorf("stderr %q", r.stderr)
	}
	mustRun(t, 0, env, "run", "--preload", pre, "true")

	c := exec.Command(binary, "run", "--preload", pre, "--", "sh", "-c", "kill -TERM $$")
	c.Env = env
	err := c.Run()
	ws, ok := c.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("a command killed by SIGTERM: %v, %v", err, c.ProcessState)
	}
	shell := exec.Command("sh", "-c", `"$0" run --preload "$1" -- sh -c 'kill -TERM $$'; echo "status $?"`, binary, pre)
	shell.Env = env
	if out, err := shell.Output(); err != nil || string(out) != "status 143\n" {
		t.Errorf("through a shell: %q, %v; want status 143", out, err)
	}

	notExec := filepath.Join(t.TempDir(), "script")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	for _, c := range []struct {
		code int
		args []string
		msg  string
	}{
		{exitCmdNotFound, []string{"--preload", pre, "no-such-command-here"}, "convcache run: no-such-command-here: command not found"},
		{exitCannotExec, []string{"--preload", pre, notExec}, "convcache run: " + notExec + ": permission denied"},
		{exitRunFailed, []string{"--preload", "/no/such/libconvcache_preload.so", "true"}, "convcache run: --preload /no/such/libconvcache_preload.so: no such file"},
	} {
		r := mustRun(t, c.code, env, append([]string{"run"}, c.args...)...)
		if !strings.HasPrefix(r.stderr, c.msg) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("run %v: stderr %q, want one line starting %q", c.args, r.stderr, c.msg)
		}
	}
}

// A signal sent to convcache run reaches the command.
func TestRunSignals(t *testing.T) {
	pre := fakePreload(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range forwarded {
		cmd := exec.Command(binary, "run", "--preload", pre, "--", self)
		cmd.Env = runEnv(t, childEnv+"=signals")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		out := bufio.NewReader(stdout)
		if line, err := out.ReadString('\n'); line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%v: the command said %q, %v", sig, line, err)
		}
		cmd.Process.Signal(sig) // to convcache run's process id
		rest, _ := io.ReadAll(out)
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 100+int(sig) || string(rest) != fmt.Sprintf("got %v\n", sig) {
			t.Errorf("%v: exit %d, output %q; want exit %d: the command did not get the signal", sig, code, rest, 100+int(sig))
		}
	}
}

// convcache run finds the interposer beside itself (the build tree), or in
// PREFIX/lib when it is PREFIX/bin/convcache, and wants libconvcache.so.1
// beside it.
func TestRunFindsInterposer(t *testing.T) {
	pre := fakePreload(t)
	real, _ := filepath.EvalSymlinks(pre)
	root := t.TempDir()
	install := func(bin, lib string, withLib bool) string {
		for _, d := range []string{bin, lib} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		exe := filepath.Join(bin, "convcache")
		copyFile(t, binary, exe)
		os.Symlink(real, filepath.Join(lib, preloadName))
		if withLib {
			os.WriteFile(filepath.Join(lib, libMajorName), nil, 0o644)
		}
		return exe
	}
	env := runEnv(t)
	for _, c := range []struct{ bin, lib string }{
		{"build", "build"},
		{"usr/local/bin", "usr/local/lib"},
		{"opt/cc/bin", "opt/cc/lib64"},
	} {
		bin, lib := filepath.Join(root, c.bin), filepath.Join(root, c.lib)
		exe := install(bin, lib, true)
		r := mustRun2(t, 0, env, exe, "run", "--", "printenv", "LD_PRELOAD")
		if want := filepath.Join(lib, preloadName) + "\n"; r.stdout != want {
			t.Errorf("%s/convcache: LD_PRELOAD %q, want %q", c.bin, r.stdout, want)
		}
	}
	// The library is missing beside the interposer.
	exe := install(filepath.Join(root, "nolib/bin"), filepath.Join(root, "nolib/lib"), false)
	r := mustRun2(t, exitRunFailed, env, exe, "run", "--", "true")
	if !strings.Contains(r.stderr, "has no libconvcache.so.1 beside it") {
		t.Errorf("no library: %q", r.stderr)
	}
	// Nowhere to be found.
	lone := filepath.Join(root, "lone", "convcache")
	os.MkdirAll(filepath.Dir(lone), 0o755)
	copyFile(t, binary, lone)
	r = mustRun2(t, exitRunFailed, env, lone, "run", "--", "true")
	if !strings.HasPrefix(r.stderr, "convcache run: cannot find libconvcache_preload.so (looked in "+filepath.Dir(lone)) ||
		!strings.Contains(r.stderr, "--preload PATH") {
		t.Errorf("no interposer: %q", r.stderr)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// mustRun2 is mustRun for another copy of the binary, with exactly env.
func mustRun2(t *testing.T, want int, env []string, exe string, args ...string) result {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := result{so.String(), se.String(), cmd.ProcessState.ExitCode()}
	if err != nil && r.code < 0 {
		t.Fatalf("%s %v: %v", exe, args, err)
	}
	if r.code != want {
		t.Fatalf("%s %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", exe, strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

// --path is checked before the command starts: a directory, a file that
// cannot be created or is not writable (outside modes ro and off) is one
// line and exit 2, and the command never runs. What can be used passes.
func TestRunChecksPath(t *testing.T) {
	pre := fakePreload(t)
	env := runEnv(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o600)
	locked := filepath.Join(dir, "locked")
	os.Mkdir(locked, 0o500)
	ran := filepath.Join(dir, "ran")
	cases := []struct{ path, mode, says string }{
		{dir, "", "is a directory"},
		{filepath.Join(file, "sub", "c.ccdb"), "", file + " is not a directory"},
		{filepath.Join(file, "c.ccdb"), "", "not a directory"},
	}
	if os.Geteuid() != 0 { // root may write anywhere
		cases = append(cases, struct{ path, mode, says string }{filepath.Join(locked, "c.ccdb"), "", locked + " is not writable by you"})
	}
	for _, c := range cases {
		args := []string{"run", "--preload", pre, "--path", c.path, "--", "touch", ran}
		r := mustRun(t, exitUsage, env, args...)
		if !strings.HasPrefix(r.stderr, "convcache run: --path: ") || !strings.Contains(r.stderr, c.says) ||
			!strings.Contains(r.stderr, "touch was not started") || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("--path %s: stderr %q, want one line saying %q", c.path, r.stderr, c.says)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("--path %s: the command ran", c.path)
		}
	}
	// Usable: a new file in a new directory, an existing file, or a file
	// in a directory it could not create in mode ro.
	for _, a := range [][]string{
		{"--path", filepath.Join(dir, "new", "c.ccdb")},
		{"--path", file},
		{"--mode", "ro", "--path", filepath.Join(locked, "c.ccdb")},
	} {
		mustRun(t, exitOK, env, append(append([]string{"run", "--preload", pre}, a...), "--", "true")...)
	}
}
