// Command plot draws the benchmark charts from bench/runner's results.json
// as PNG files with gonum.org/v1/plot: log axes, a legend, and whiskers from
// the lowest to the highest of the repeats around each median. It is a
// module of its own with bench/runner (bench/go.mod), so that the library's
// go.mod does not carry the plotting library.
//
// Usage (make bench builds and runs it):
//
//	plot -in build/bench/results.json -out build/bench
//
// It writes hit_latency.png, hit_latency_random.png,
// hit_throughput_2threads.png, load.png, writers.png and cold_warm.png; a
// chart with no data is left out.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/convcache/convcache/bench/internal/results"
)

func main() {
	in := flag.String("in", "build/bench/results.json", "results written by bench/runner")
	out := flag.String("out", "build/bench", "directory for the PNG files")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintf(os.Stderr, "plot: %v\n", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var r results.Results
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %v", in, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	charts := charts(&r)
	sub := fmt.Sprintf("%s · %s", r.Date, r.Machine)
	for _, name := range slices.Sorted(maps.Keys(charts)) {
		ch := charts[name]
		if len(ch.series) == 0 {
			continue
		}
		p := filepath.Join(out, name)
		if err := ch.save(p, sub); err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		fmt.Fprintf(os.Stderr, "plot: wrote %s\n", p)
	}
	return nil
}

// charts is every chart the README shows, by file name.
func charts(r *results.Results) map[string]*chart {
	return map[string]*chart{
		"hit_latency.png": perSize(r, "hit1_ns", chart{
			title:  "find hit latency, 1 thread, network order",
			xlabel: "entries in the cache", ylabel: "ns per find (log)",
		}),
		"hit_latency_random.png": perSize(r, "hit1r_ns", chart{
			title:  "find hit latency, 1 thread, random order",
			xlabel: "entries in the cache", ylabel: "ns per find (log)",
		}),
		"cold_warm.png": coldWarm(r, chart{
			title:    "time choosing algorithms: a cold run, then a warm run",
			ylabel:   "ms choosing (log)",
			footnote: "Demo: CPU autotuner, ResNet-50 and Darknet-53 at varying sizes. v8: stand-in cuDNN on a CPU, 20 ms simulated per engine config; not a GPU.",
		}),
		"hit_throughput_2threads.png": groupedBars(r, "mops2", chart{
			title:  "find hit throughput, 2 threads",
			xlabel: "entries in the cache", ylabel: "million finds/s (log)",
		}),
		"load.png": perSizeOf(r, r.LoadSizesOrSizes(), "load_ms", chart{
			title:  "load: cold process to first answer",
			xlabel: "entries in the file", ylabel: "ms (log)",
		}),
		"writers.png": writers(r, chart{
			title:    "concurrent writer processes, one store",
			xlabel:   fmt.Sprintf("processes, each inserting %d distinct keys", r.PerWriter),
			ylabel:   "inserts/s, all processes (log)",
			footnote: "Labels: entries lost (median). Naive file: each process writes the whole map at exit; the last one wins.",
		}),
	}
}
