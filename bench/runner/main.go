// Command runner runs convcache's benchmark workloads against every
// implementation in one run, prints one Markdown table of medians, spreads
// and ratios, and writes the raw samples as JSON for bench/plot.
//
// Each measurement is a fresh worker process (bench_<impl>, built from
// bench/impl_*.cpp and bench/workloads.hpp). Repeats are interleaved:
// repeat 1 of every implementation, then repeat 2, and so on, so that a
// burst of load on the shared machine lands on all of them rather than on
// one.
//
// Usage (make bench runs it):
//
//	runner -bin build/bench -out build/bench [-reps 5] [-quick]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/convcache/convcache/bench/internal/results"
)

var allImpls = []results.Impl{
	{ID: "a", Key: "cabi", Name: "convcache C ABI", Persistent: true, Ours: true},
	{ID: "b", Key: "dropin", Name: "convcache C++ drop-in", Persistent: true, Ours: true},
	{ID: "c", Key: "stdmap", Name: "PyTorch map (memory)", Persistent: false},
	{ID: "d", Key: "naive", Name: "naive file", Persistent: true},
	{ID: "e", Key: "sqlite", Name: "SQLite WAL", Persistent: true},
}

// workerBin is implementation im's worker binary.
func workerBin(im results.Impl) string { return filepath.Join(*binDir, "bench_"+im.Key) }

var (
	binDir  = flag.String("bin", "build/bench", "directory of the bench_* worker binaries")
	outDir  = flag.String("out", "build/bench", "directory for results.json and results.md")
	workDir = flag.String("work", "", "directory for the stores (default: OUT/work, removed afterwards)")
	reps    = flag.Int("reps", 5, "repeats of each figure")
	repsBig = flag.Int("reps-large", 3, "repeats of the 1M-entry figures")
	hitMs   = flag.Int("hit-ms", 300, "minimum duration of each timed hit loop, ms")
	perW    = flag.Int("per-writer", 5000, "keys each writer process inserts")
	demo    = flag.String("demo", "", "the demo binary (examples/demo): adds its cold and warm runs")
	demoRep = flag.Int("demo-reps", 3, "repeats of the demo workload")
	v8      = flag.String("v8", "", "the GPU check (bench/gpu/v8_check) and the stand-in libraries' directory, as CHECK:DIR: adds the v8 engine-choice table")
	v8Reps  = flag.Int("v8-reps", 3, "repeats of the v8 engine-choice runs")
	quick   = flag.Bool("quick", false, "a fast smoke run: 10k and 100k entries, 1 repeat")
	keep    = flag.Bool("keep", false, "keep the stores in the work directory")
	only    = flag.String("impls", "", "comma-separated implementation keys to run (default: every built one)")
)

const rawEntry = 104 + 48 // key + value bytes

func main() {
	flag.Parse()
	start := time.Now()
	sizes := []int{10000, 100000, 1000000}
	writers := []int{1, 2, 4, 8}
	if *quick {
		sizes = []int{10000, 100000}
		*reps, *repsBig = 1, 1
		*hitMs = 100
		*perW = 2000
		*demoRep = 1
		*v8Reps = 1
	}
	res := &results.Results{
		Date:      start.UTC().Format("2006-01-02 15:04 UTC"),
		Machine:   machine(),
		Command:   "make bench",
		Reps:      *reps,
		RepsLarge: *repsBig,
		Sizes:     sizes,
		Writers:   writers,
		PerWriter: *perW,
		HitMillis: *hitMs,
		Samples:   map[string]map[string][]float64{},
	}
	res.LoadAvg[0] = loadAvg()
	for _, im := range allImpls {
		if _, err := os.Stat(workerBin(im)); err != nil {
			if im.Key == "dropin" {
				res.Notes = append(res.Notes, "(b) C++ drop-in: not built (include/convcache.hpp missing), column pending")
			}
			continue
		}
		if *only != "" && !strings.Contains(","+*only+",", ","+im.Key+",") {
			continue
		}
		res.Impls = append(res.Impls, im)
	}
	if len(res.Impls) == 0 {
		fatalf("no worker binaries in %s", *binDir)
	}
	wd := *workDir
	if wd == "" {
		wd = filepath.Join(*outDir, "work")
	}
	os.RemoveAll(wd)
	if err := os.MkdirAll(wd, 0o755); err != nil {
		fatalf("%v", err)
	}
	if !*keep {
		defer os.RemoveAll(wd)
	}

	repsFor := func(n int) int {
		if n >= 1000000 {
			return *repsBig
		}
		return *reps
	}
	store := func(im results.Impl, n int) string { return filepath.Join(wd, fmt.Sprintf("%s.%d", im.Key, n)) }

	// 1. Prepared stores, two at a time (this is set-up, not a figure; the
	//    file size after compaction is).
	phase("prep: filling the stores (10k, 100k, 1M entries) and compacting them")
	var jobs []func()
	var mu sync.Mutex
	for _, n := range sizes {
		for _, im := range res.Impls {
			if !im.Persistent {
				continue
			}
			im, n := im, n
			jobs = append(jobs, func() {
				f := mustRun(im, "prep", store(im, n), strconv.Itoa(n))
				mu.Lock()
				res.Add(fmt.Sprintf("file_bpe/%d", n), im.ID, f["file_bytes"]/float64(n))
				res.Add(fmt.Sprintf("prep_s/%d", n), im.ID, f["prep_s"])
				mu.Unlock()
				progress("prep %-7s %7d: %.1f s, %.1f bytes/entry", im.Key, n, f["prep_s"], f["file_bytes"]/float64(n))
			})
		}
	}
	parallel(2, jobs)

	// 2. Hits at 1 and 2 threads, and resident memory.
	phase("hit: find latency (1 thread) and throughput (2 threads)")
	for _, n := range sizes {
		for r := 0; r < repsFor(n); r++ {
			for _, im := range res.Impls {
				f := mustRun(im, "hit", store(im, n), strconv.Itoa(n), strconv.Itoa(*hitMs))
				res.Add(fmt.Sprintf("hit1_ns/%d", n), im.ID, f["hit1_ns"])
				res.Add(fmt.Sprintf("mops1/%d", n), im.ID, f["mops1"])
				res.Add(fmt.Sprintf("mops2/%d", n), im.ID, f["mops2"])
				res.Add(fmt.Sprintf("rss/%d", n), im.ID, f["rss_per_entry"])
				if v, ok := f["front_per_entry"]; ok {
					res.Add(fmt.Sprintf("front/%d", n), im.ID, v)
				}
				progress("hit %-7s %7d rep %d: %.0f ns, 2 threads %.2f Mops/s", im.Key, n, r+1, f["hit1_ns"], f["mops2"])
			}
		}
	}

	// 3. Cold process to first answer, and to every key answered once.
	phase("load: cold process to first answer")
	for _, n := range sizes {
		for r := 0; r < repsFor(n); r++ {
			for _, im := range res.Impls {
				if !im.Persistent {
					continue
				}
				t0 := time.Now().UnixNano()
				f := mustRun(im, "load", store(im, n), strconv.Itoa(n), strconv.FormatInt(t0, 10))
				res.Add(fmt.Sprintf("load_ms/%d", n), im.ID, f["load_ms"])
				if all, ok := f["all_ms"]; ok {
					res.Add(fmt.Sprintf("all_ms/%d", n), im.ID, all)
				}
				progress("load %-7s %7d rep %d: first %.1f ms, all %.1f ms", im.Key, n, r+1, f["load_ms"], f["all_ms"])
			}
		}
	}

	// 4. Concurrent writer processes on one store.
	phase("writers: processes inserting distinct keys into one store")
	for r := 0; r < *reps; r++ {
		for _, p := range writers {
			for _, im := range res.Impls {
				if !im.Persistent {
					continue
				}
				tput, lost, errs := writeRound(im, filepath.Join(wd, fmt.Sprintf("w-%s-%d-%d", im.Key, p, r)), p, *perW)
				res.Add(fmt.Sprintf("wtput/%d", p), im.ID, tput)
				res.Add(fmt.Sprintf("wlost/%d", p), im.ID, float64(lost))
				res.Add(fmt.Sprintf("werr/%d", p), im.ID, float64(errs))
				progress("write %-7s %d procs rep %d: %.0f inserts/s, %d lost, %d errors", im.Key, p, r+1, tput, lost, errs)
			}
		}
	}

	// 5. The demo workload (make demo): time spent choosing algorithms in a
	//    cold run and in the warm run after it, through the C++ drop-in; and
	//    with CONVCACHE_MODE=off, where the drop-in keeps results in memory
	//    only, as PyTorch's own map does, so every run benchmarks again.
	if _, err := os.Stat(*demo); *demo != "" && err == nil {
		phase("demo: the demo workload, cold run then warm run")
		for r := 0; r < *demoRep; r++ {
			path := filepath.Join(wd, fmt.Sprintf("demo-%d.ccdb", r))
			cold := runDemo(path, wd, "--run", "1", "--cold")
			warm := runDemo(path, wd, "--run", "2")
			mem := runDemo(path+"-off", wd, "--run", "1", "CONVCACHE_MODE=off")
			res.Add("demo_cold_ms", "b", cold*1e3)
			res.Add("demo_warm_ms", "b", warm*1e3)
			res.Add("demo_cold_ms", "c", mem*1e3)
			res.Add("demo_warm_ms", "c", mem*1e3)
			progress("demo rep %d: cold %.2f s, warm %.3f ms; memory only %.2f s", r+1, cold, warm*1e3, mem)
		}
	} else {
		res.Notes = append(res.Notes, "Demo workload (cold vs warm run): pending, examples/demo is not built.")
	}

	// 6. PyTorch's default (cuDNN backend API) path on the stand-in cuDNN:
	//    time spent choosing engines in a cold run (benchmarking each
	//    heuristic config) and in the run after it (rebuilding each plan from
	//    the stored choice).
	if *v8 != "" {
		phase(fmt.Sprintf("v8: engine choices, %d shapes, %d ms simulated benchmark per engine, run 1 then run 2", v8Shapes, v8EngineMs))
		for r := 0; r < *v8Reps; r++ {
			r1, r2 := runV8(*v8, filepath.Join(wd, fmt.Sprintf("v8-%d", r)))
			res.Add("v8_run1_ms", "v8", r1)
			res.Add("v8_run2_ms", "v8", r2)
			progress("v8 rep %d: run 1 %.0f ms choosing, run 2 %.2f ms (%.3g%%)", r+1, r1, r2, 100*r2/r1)
		}
	}

	res.LoadAvg[1] = loadAvg()
	res.WallSeconds = time.Since(start).Seconds()
	tbl := table(res)
	fmt.Println()
	fmt.Print(tbl)
	must(os.MkdirAll(*outDir, 0o755))
	must(os.WriteFile(filepath.Join(*outDir, "results.md"), []byte(tbl), 0o644))
	js, err := json.MarshalIndent(res, "", "  ")
	must(err)
	must(os.WriteFile(filepath.Join(*outDir, "results.json"), js, 0o644))
	fmt.Fprintf(os.Stderr, "bench: wrote %s and %s (%.0f s)\n",
		filepath.Join(*outDir, "results.md"), filepath.Join(*outDir, "results.json"), res.WallSeconds)
}

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
	var env, flags []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CONVCACHE_") {
			env = append(env, e)
		}
	}
	env = append(env, "CONVCACHE_PATH="+path)
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
	b, err := os.ReadFile(report)
	must(err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "choosing_s="); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			must(err)
			return f
		}
	}
	fatalf("%s: no choosing_s in %s", *demo, report)
	return 0
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
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CONVCACHE_") && !strings.HasPrefix(e, "STANDIN_") {
			env = append(env, e)
		}
	}
	env = append(env, "CONVCACHE_CUDA_LIBRARY="+filepath.Join(libs, "libcuda.so.1"),
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
	read := func(n int) float64 {
		b, err := os.ReadFile(report(n))
		must(err)
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "choosing_ms="); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				must(err)
				return f
			}
		}
		fatalf("%s: no choosing_ms", report(n))
		return 0
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	return read(1), read(2)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// workerCmd is a worker process with CONVCACHE_* variables removed from its
// environment, so that a user's settings (CONVCACHE_DISABLE, a remote tier)
// cannot change what is measured.
//
// The prep fill defers compaction (CONVCACHE_COMPACT_JOURNAL=1T): the store
// is compacted once at the end (bench/convcache_prep.hpp), which gives the
// same file in a fraction of the set-up time.
func workerCmd(im results.Impl, args ...string) *exec.Cmd {
	cmd := exec.Command(workerBin(im), args...)
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CONVCACHE_") {
			env = append(env, e)
		}
	}
	if args[0] == "prep" {
		env = append(env, "CONVCACHE_COMPACT_JOURNAL=1T")
	}
	cmd.Env = env
	cmd.Stderr = os.Stderr
	return cmd
}

// mustRun runs a worker to completion and returns the fields of its line.
func mustRun(im results.Impl, args ...string) map[string]float64 {
	cmd := workerCmd(im, args...)
	out, err := cmd.Output()
	if err != nil {
		fatalf("%s %s: %v\n%s", workerBin(im), strings.Join(args, " "), err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := fields(lines[len(lines)-1])
	if _, bad := f["error"]; bad {
		fatalf("%s %s: %s", workerBin(im), strings.Join(args, " "), out)
	}
	return f
}

// fields parses "name=value name=value ...".
func fields(line string) map[string]float64 {
	f := map[string]float64{}
	for _, tok := range strings.Fields(line) {
		name, val, ok := strings.Cut(tok, "=")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			f["error"] = 1
			continue
		}
		f[name] = v
	}
	return f
}

func parallel(n int, jobs []func()) {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			j()
		}()
	}
	wg.Wait()
}

// machine describes the CPU, cores, memory and kernel.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if _, v, ok := strings.Cut(l, ":"); ok {
					cpu = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(string(b), "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s, %d cores%s%s, %s", cpu, runtime.NumCPU(), mem, kernel, runtime.Version())
}

func phase(s string) { fmt.Fprintf(os.Stderr, "bench: %s\n", s) }

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "  "+format+"\n", args...)
}

func must(err error) {
	if err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}
