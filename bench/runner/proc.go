package main

// Worker processes, the machine's description and progress output.

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/convcache/convcache/bench/internal/results"
)

// loadAvg is the first three fields of /proc/loadavg, or "?".
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
	env := environ("CONVCACHE_")
	if args[0] == "prep" {
		env = append(env, "CONVCACHE_COMPACT_JOURNAL=1T")
	}
	cmd.Env = env
	cmd.Stderr = os.Stderr
	return cmd
}

// environ is this process's environment without the variables whose names
// start with one of drop, so that a user's settings cannot change what a
// child measures.
func environ(drop ...string) []string {
	var env []string
next:
	for _, e := range os.Environ() {
		for _, p := range drop {
			if strings.HasPrefix(e, p) {
				continue next
			}
		}
		env = append(env, e)
	}
	return env
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
