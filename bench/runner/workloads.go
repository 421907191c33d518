package main

// The workloads that need more than one worker run: writer processes
// together, the demo, and the v8 engine-choice runs.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/convcache/convcache/bench/internal/results"
)

// writeRound starts p writer processes on a fresh store, lets them insert
// together, and then counts what the store holds. It returns the aggregate
// inserts per second (from the go signal to the last writer's end, close
// included), the entries lost and the insert errors reported.
func writeRound(im results.Impl, path string, p, k int) (tput float64, lost, errs int) {
	mustRun(im, "init", path)
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	procs := make([]proc, p)
	for i := range procs {
		cmd := workerCmd(im, "write", path, strconv.Itoa(i), strconv.Itoa(k))
		in, err := cmd.StdinPipe()
		must(err)
		out, err := cmd.StdoutPipe()
		must(err)
		must(cmd.Start())
		procs[i] = proc{cmd, in, bufio.NewReader(out)}
	}
	for _, pr := range procs {
		line, err := pr.out.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "ready" {
			fatalf("%s write: expected ready, got %q (%v)", im.Key, line, err)
		}
	}
	t0 := time.Now().UnixNano()
	for _, pr := range procs {
		io.WriteString(pr.stdin, "go\n")
		pr.stdin.Close()
	}
	var end float64
	for _, pr := range procs {
		line, err := pr.out.ReadString('\n')
		if err != nil {
			fatalf("%s write: %v", im.Key, err)
		}
		f := fields(line)
		if _, bad := f["error"]; bad {
			fatalf("%s write: %s", im.Key, line)
		}
		end = max(end, f["end_ns"])
		errs += int(f["errors"])
		if err := pr.cmd.Wait(); err != nil {
			fatalf("%s write: %v", im.Key, err)
		}
	}
	total := p * k
	tput = float64(total) / ((end - float64(t0)) / 1e9)
	f := mustRun(im, "count", path, strconv.Itoa(total))
	lost = total - int(f["found"])
	if !*keep {
		for _, suffix := range []string{"", "-wal", "-shm", ".lock"} {
			os.Remove(path + suffix)
		}
	}
	return tput, lost, errs
}

// runDemo runs the demo once on the cache file path and returns the seconds
// it spent choosing algorithms. An argument NAME=VALUE is an environment
// variable for it.
func runDemo(path, dir string, args ...string) float64 {
	report := filepath.Join(dir, "demo-report.txt")
	os.Remove(report)
	var flags []string
	env := append(environ("CONVCACHE_"), "CONVCACHE_PATH="+path)
	for _, a := range args {
		if strings.Contains(a, "=") {
			env = append(env, a)
		} else {
			flags = append(flags, a)
		}
	}
	cmd := exec.Command(*demo, append(flags, "--report", report)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		fatalf("%s %s: %v\n%s", *demo, strings.Join(args, " "), err, out)
	}
	return reportValue(report, "choosing_s")
}

// The v8 row's workload: 40 of ResNet-50's convolution problems, and a
// stand-in cuDNN whose every engine benchmark (a warm-up and 3 timed runs)
// sleeps 20 ms on average.
const (
	v8Shapes   = 40
	v8EngineMs = 20
)

// runV8 runs bench/gpu/v8_check twice on a fresh cache file in dir and
// returns the milliseconds each run spent choosing. spec is CHECK:DIR, DIR
// holding the stand-in libcuda.so.1 and libcudnn.so.9.
func runV8(spec, dir string) (run1, run2 float64) {
	bin, libs, ok := strings.Cut(spec, ":")
	if !ok {
		fatalf("-v8 wants CHECK:DIR, got %q", spec)
	}
	must(os.MkdirAll(dir, 0o755))
	env := append(environ("CONVCACHE_", "STANDIN_"), "CONVCACHE_CUDA_LIBRARY="+filepath.Join(libs, "libcuda.so.1"),
		"CONVCACHE_CUDNN_LIBRARY="+filepath.Join(libs, "libcudnn.so.9"),
		fmt.Sprintf("STANDIN_EXEC_US=%d", v8EngineMs*1000/4))
	flags := []string{"--batch", "1", "--sizes", "64", "--limit", strconv.Itoa(v8Shapes), "--cache", filepath.Join(dir, "v8.ccdb")}
	report := func(n int) string { return filepath.Join(dir, fmt.Sprintf("run%d.txt", n)) }
	for n := 1; n <= 2; n++ {
		args := append([]string{"--run", strconv.Itoa(n), "--report", report(n)}, flags...)
		if n == 2 {
			args = append(args, "--compare", report(1))
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
		}
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	return reportValue(report(1), "choosing_ms"), reportValue(report(2), "choosing_ms")
}

// reportValue is the number on the line "name=value" of the report file at
// path; the run fails without one.
func reportValue(path, name string) float64 {
	b, err := os.ReadFile(path)
	must(err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			must(err)
			return f
		}
	}
	fatalf("%s: no %s", path, name)
	return 0
}
