// Command runner runs convcache's benchmark workloads against every
// implementation in one run, prints one Markdown table of medians, spreads
// and ratios (results.md), writes the README's short summary of it
// (summary.md) and the raw samples as JSON for bench/plot (results.json).
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
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/convcache/convcache/bench/internal/results"
)

// allImpls is every implementation compared. (a) and (b) are convcache:
// (a) its C ABI; (b) the C++ drop-in for PyTorch's BenchmarkCache, which
// calls the library's C hit path (convcache_find) directly, with no private
// map (issue 17). (c) is PyTorch's own map, (d) and (e) the files a user
// would otherwise keep.
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
	from    = flag.String("from", "", "measure nothing: write results.md and summary.md again from this results.json (after a change to how they are written)")
	keep    = flag.Bool("keep", false, "keep the stores in the work directory")
	only    = flag.String("impls", "", "comma-separated implementation keys to run (default: every built one)")
)

const rawEntry = 104 + 48 // key + value bytes

func main() {
	flag.Parse()
	if *from != "" {
		var res results.Results
		b, err := os.ReadFile(*from)
		must(err)
		must(json.Unmarshal(b, &res))
		writeTables(&res)
		return
	}
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
	// The load rows add a store of 1 entry: the floor of a cold first
	// answer (exec, linking, runtime start, open), which a first answer
	// from a larger file is judged against.
	loadSizes := append([]int{1}, sizes...)
	res := &results.Results{
		Date:      start.UTC().Format("2006-01-02 15:04 UTC"),
		Machine:   machine(),
		Command:   "make bench",
		Reps:      *reps,
		RepsLarge: *repsBig,
		Sizes:     sizes,
		LoadSizes: loadSizes,
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
	//    file size after compaction is, except for the 1-entry store, which
	//    only the load rows use).
	var names []string
	for _, n := range loadSizes {
		names = append(names, results.SizeName(n))
	}
	phase(fmt.Sprintf("prep: filling the stores (%s entries) and compacting them", strings.Join(names, ", ")))
	var jobs []func()
	var mu sync.Mutex
	for _, n := range loadSizes {
		for _, im := range res.Impls {
			if !im.Persistent {
				continue
			}
			im, n := im, n
			jobs = append(jobs, func() {
				f := mustRun(im, "prep", store(im, n), strconv.Itoa(n))
				mu.Lock()
				if n > 1 {
					res.Add(fmt.Sprintf("file_bpe/%d", n), im.ID, f["file_bytes"]/float64(n))
					res.Add(fmt.Sprintf("prep_s/%d", n), im.ID, f["prep_s"])
				}
				mu.Unlock()
				progress("prep %-7s %7d: %.1f s, %.1f bytes/entry", im.Key, n, f["prep_s"], f["file_bytes"]/float64(n))
			})
		}
	}
	parallel(2, jobs)

	// 2. Hits at 1 and 2 threads, and resident memory.
	phase("hit: find latency (1 thread, network and random order) and throughput (2 threads)")
	for _, n := range sizes {
		for r := 0; r < repsFor(n); r++ {
			for _, im := range res.Impls {
				f := mustRun(im, "hit", store(im, n), strconv.Itoa(n), strconv.Itoa(*hitMs))
				res.Add(fmt.Sprintf("hit1_ns/%d", n), im.ID, f["hit1_ns"])
				res.Add(fmt.Sprintf("hit1r_ns/%d", n), im.ID, f["hit1r_ns"])
				res.Add(fmt.Sprintf("mops1/%d", n), im.ID, f["mops1"])
				res.Add(fmt.Sprintf("mops2/%d", n), im.ID, f["mops2"])
				res.Add(fmt.Sprintf("rss/%d", n), im.ID, f["rss_per_entry"])
				res.Add(fmt.Sprintf("rss_store/%d", n), im.ID, f["rss_store_per_entry"])
				res.Add(fmt.Sprintf("rss_libs/%d", n), im.ID, f["rss_libs_per_entry"])
				progress("hit %-7s %7d rep %d: %.0f ns (random order %.0f ns), 2 threads %.2f Mops/s", im.Key, n, r+1, f["hit1_ns"], f["hit1r_ns"], f["mops2"])
			}
		}
	}

	// 3. Cold process to first answer, and to every key answered once.
	//    Repeat i of every size runs before repeat i+1 of any, so that a
	//    size's first answer and the 1-entry store's, which it is judged
	//    against, are measured under the same load.
	phase("load: cold process to first answer")
	for r := 0; r < max(*reps, *repsBig); r++ {
		for _, n := range loadSizes {
			if r >= repsFor(n) {
				continue
			}
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
	fmt.Println()
	writeTables(res)
	js, err := json.MarshalIndent(res, "", "  ")
	must(err)
	must(os.WriteFile(filepath.Join(*outDir, "results.json"), js, 0o644))
	fmt.Fprintf(os.Stderr, "bench: wrote %s (%.0f s)\n", filepath.Join(*outDir, "results.json"), res.WallSeconds)
}

// writeTables prints the table and writes it, and the README's summary, to
// results.md and summary.md in the output directory.
func writeTables(res *results.Results) {
	tbl := table(res)
	fmt.Print(tbl)
	must(os.MkdirAll(*outDir, 0o755))
	for name, text := range map[string]string{"results.md": tbl, "summary.md": summary(res)} {
		must(os.WriteFile(filepath.Join(*outDir, name), []byte(text), 0o644))
		fmt.Fprintf(os.Stderr, "bench: wrote %s\n", filepath.Join(*outDir, name))
	}
}
