package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/convcache/convcache/internal/hostile"
)

const (
	scope     = "hostile"
	baseLimit = 64 << 20 // bytes of resident memory allowed besides 40 x the file
	perByte   = 40
	baseTime  = 10 * time.Second
	perMiB    = 2 * time.Second
)

type harness struct {
	build, bin, tmp string
	base            string // preload_prog's results without the interposer
	failures        []string
}

// run is one measured child process.
type run struct {
	rssKB int64
	ms    int64
	exit  int // -1: killed by a signal or the time limit
	note  string
	out   string // its stdout
	err   string // its stderr
}

func main() {
	build := flag.String("build", "build", "the build directory: libconvcache.so, convcache, the interposer, the test programs")
	only := flag.String("only", "", "comma-separated classes (default: all)")
	scale := flag.Float64("scale", 1, "multiply each class's default size")
	keep := flag.Bool("keep", false, "keep the work directory")
	bin := flag.String("bin", "", "where libprog and rss are (default: BUILD/tests/hostile)")
	flag.Parse()
	h := &harness{build: mustAbs(*build)}
	h.bin = filepath.Join(h.build, "tests", "hostile")
	if *bin != "" {
		h.bin = mustAbs(*bin)
	}
	tmp, err := os.MkdirTemp("", "convcache-hostile-")
	if err != nil {
		fail("%v", err)
	}
	h.tmp = tmp
	cleanup := func() {
		if !*keep {
			os.RemoveAll(tmp)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; cleanup(); os.Exit(1) }()
	code := h.main(*only, *scale)
	cleanup()
	if *keep {
		fmt.Println("work directory kept:", tmp)
	}
	os.Exit(code)
}

func (h *harness) main(only string, scale float64) int {
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		if n != "" {
			want[n] = true
		}
	}
	h.base = filepath.Join(h.tmp, "base.txt")
	r := h.measure(time.Minute, h.env(nil), filepath.Join(h.build, "tests/preload/preload_prog"), "run", h.base)
	if r.exit != 0 {
		fail("preload_prog without the interposer: %s %s", r.note, r.err)
	}
	tools := []string{"lib", "verify", "ls", "dump", "stats", "compact", "preload"}
	fmt.Printf("%-16s %9s %8s", "class", "size", "limit")
	for _, t := range tools {
		fmt.Printf(" %14s", t)
	}
	fmt.Println("\n" + strings.Repeat("-", 35+15*len(tools)))
	for _, c := range hostile.Classes() {
		if len(want) > 0 && !want[c.Name] {
			continue
		}
		data := c.Build(int(float64(c.Size)*scale), scope)
		limitKB := (baseLimit + perByte*int64(len(data))) >> 10
		timeout := baseTime + time.Duration(float64(perMiB)*float64(len(data))/(1<<20))
		dir := filepath.Join(h.tmp, c.Name)
		os.MkdirAll(dir, 0o700)
		file := filepath.Join(dir, "hostile.ccdb")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			fail("%v", err)
		}
		fmt.Printf("%-16s %9d %7.0fM", c.Name, len(data), float64(limitKB)/1024)
		for _, t := range tools {
			rs, problem := h.tool(t, dir, file, timeout)
			cell := ""
			for _, r := range rs {
				if r.rssKB > limitKB {
					problem = fmt.Sprintf("peak RSS %d KiB > limit %d KiB", r.rssKB, limitKB)
				}
				if r.exit == -1 && problem == "" {
					problem = r.note
				}
			}
			top := rs[0]
			for _, r := range rs[1:] {
				if r.rssKB > top.rssKB {
					top = r
				}
			}
			cell = fmt.Sprintf("%5.1fM %6s", float64(top.rssKB)/1024, msText(top.ms))
			if problem != "" {
				cell = "FAIL " + cell
				h.failures = append(h.failures, fmt.Sprintf("%s / %s: %s", c.Name, t, problem))
			}
			fmt.Printf(" %14s", cell)
		}
		fmt.Println()
	}
	if len(h.failures) > 0 {
		fmt.Printf("\n%d failure(s):\n", len(h.failures))
		for _, f := range h.failures {
			fmt.Println("  " + f)
		}
		return 1
	}
	fmt.Println("\nhostile-test: every class, every tool, within its limits")
	return 0
}

// tool runs one tool on one class's file and says what went wrong, if
// anything (limits are checked by the caller).
func (h *harness) tool(name, dir, file string, timeout time.Duration) ([]run, string) {
	cli := filepath.Join(h.build, "convcache")
	copyTo := func(sub string) string {
		p := filepath.Join(dir, sub, "cache.ccdb")
		os.MkdirAll(filepath.Dir(p), 0o700)
		data, _ := os.ReadFile(file)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			fail("%v", err)
		}
		return p
	}
	switch name {
	case "lib":
		p := copyTo("lib")
		env := h.env([]string{"CONVCACHE_COMPACT_JOURNAL=1", "CONVCACHE_MAX_BYTES=65536", "LD_LIBRARY_PATH=" + h.build})
		r := h.measure(timeout, env, filepath.Join(h.bin, "libprog"), p, scope)
		return []run{r}, exitProblem(r, 0)
	case "verify", "ls", "dump", "stats":
		r := h.measure(timeout, h.env(nil), cli, name, file)
		return []run{r}, exitProblem(r, 0, 1)
	case "compact":
		p := copyTo("compact")
		r := h.measure(timeout, h.env(nil), cli, "compact", p)
		if pr := exitProblem(r, 0); pr != "" {
			return []run{r}, pr
		}
		v := h.measure(timeout, h.env(nil), cli, "verify", p)
		if pr := exitProblem(v, 0); pr != "" {
			return []run{r, v}, "verify after compact: " + pr
		}
		return []run{r, v}, ""
	case "preload":
		p := copyTo("preload")
		env := h.env([]string{"CONVCACHE_PATH=" + p, "CONVCACHE_SCOPE=" + scope,
			"LD_PRELOAD=" + filepath.Join(h.build, "libconvcache_preload.so")})
		prog := filepath.Join(h.build, "tests/preload/preload_prog")
		var rs []run
		for i := 1; i <= 2; i++ {
			out := filepath.Join(dir, fmt.Sprintf("preload%d.txt", i))
			r := h.measure(timeout, env, prog, "run", out)
			rs = append(rs, r)
			if pr := exitProblem(r, 0); pr != "" {
				return rs, fmt.Sprintf("run %d: %s", i, pr)
			}
			got, _ := os.ReadFile(out)
			base, _ := os.ReadFile(h.base)
			if !bytes.Equal(got, base) {
				return rs, fmt.Sprintf("run %d: results differ from a run without the interposer", i)
			}
			if finds := field(r.out, "finds"); i == 2 && finds != "0" {
				return rs, fmt.Sprintf("run 2 reached cuDNN's find %s times, want 0 (the cache did not keep run 1's results)", finds)
			}
		}
		return rs, ""
	}
	panic(name)
}

func exitProblem(r run, ok ...int) string {
	if r.exit == -1 {
		return r.note
	}
	for _, c := range ok {
		if r.exit == c {
			return ""
		}
	}
	return fmt.Sprintf("exit %d: %s", r.exit, lastLines(r.err, 3))
}

// measure runs a command through rss and returns what it measured.
func (h *harness) measure(timeout time.Duration, env []string, prog string, args ...string) run {
	rf, err := os.CreateTemp(h.tmp, "rss-")
	if err != nil {
		fail("%v", err)
	}
	defer os.Remove(rf.Name())
	defer rf.Close()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(h.bin, "rss"), append([]string{fmt.Sprint(timeout.Milliseconds()), prog}, args...)...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.ExtraFiles = []*os.File{rf} // file descriptor 3
	if err := cmd.Run(); err != nil {
		fail("rss %s: %v: %s", prog, err, stderr.String())
	}
	line, _ := os.ReadFile(rf.Name())
	r := run{exit: -1, out: stdout.String(), err: stderr.String()}
	for _, f := range strings.Fields(string(line)) {
		k, v, _ := strings.Cut(f, "=")
		var n int64
		fmt.Sscan(v, &n)
		switch k {
		case "maxrss_kb":
			r.rssKB = n
		case "ms":
			r.ms = n
		case "exit":
			r.exit = int(n)
		case "signal":
			r.note = fmt.Sprintf("killed by signal %d: %s", n, lastLines(r.err, 3))
		case "timeout":
			r.note = fmt.Sprintf("killed after the time limit of %v", timeout)
		}
	}
	return r
}

// env is this process's environment without convcache's variables, plus
// extra.
func (h *harness) env(extra []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONVCACHE_") && !strings.HasPrefix(kv, "LD_PRELOAD=") &&
			!strings.HasPrefix(kv, "STANDIN_") && !strings.HasPrefix(kv, "LD_LIBRARY_PATH=") {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

func field(out, name string) string {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func msText(ms int64) string {
	if ms >= 10000 {
		return fmt.Sprintf("%ds", ms/1000)
	}
	return fmt.Sprintf("%dms", ms)
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		fail("%v", err)
	}
	return a
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "harness: "+format+"\n", args...)
	os.Exit(2)
}
