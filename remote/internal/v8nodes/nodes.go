package v8nodes

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Node is what one node's run got.
type Node struct {
	Graphs      int // convolution graphs keyed
	Served      int // served from the cache (its file or the tier)
	Benchmarked int // benchmarked by the program
	// LongestLookup is the longest cache lookup in its event log
	// (CONVCACHE_VERBOSE=1): a miss, with the tier's time in it, or a hit.
	LongestLookup time.Duration
	Report        string   // its v8 summary line
	Warnings      []string // the remote tier's warning lines
}

// Setup names what Run uses.
type Setup struct {
	Build string   // the build directory: convcache and the interposer
	Prog  string   // torch_like
	Dir   string   // where the nodes' cache files and reports go
	URL   string   // the tier's redis:// URL
	Env   []string // more NAME=value settings for every node
}

var (
	// The interposer's v8 summary (CONVCACHE_VERBOSE): hits are graphs
	// served, misses and stand-asides graphs benchmarked.
	summaryLine = regexp.MustCompile(`(?m)^convcache-preload: v8: graphs (\d+), hits (\d+), misses (\d+), stand-asides (\d+),.*$`)
	lookupLine  = regexp.MustCompile(`(?m)^convcache,(?:miss|hit|persistent_hit|system_hit|remote_hit),[^,]*,[^,]*,([0-9.]+)`)
)

// Run starts n nodes together, as run (a name for their files), waits for
// them and returns what each got. A node that fails is an error, with its
// output.
func Run(s Setup, run string, n int) ([]Node, error) {
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	for i := range cmds {
		name := fmt.Sprintf("%s-node%d", run, i)
		c := exec.Command(filepath.Join(s.Build, "convcache"), "run", "--path", filepath.Join(s.Dir, name+".ccdb"), "--",
			s.Prog, "--report", filepath.Join(s.Dir, name+".txt"))
		c.Env = append(environ(), "CONVCACHE_REMOTE="+s.URL, "CONVCACHE_VERBOSE=1", "STANDIN_EXEC_US=300")
		c.Env = append(c.Env, s.Env...)
		outs[i] = &bytes.Buffer{}
		c.Stdout, c.Stderr = outs[i], outs[i]
		cmds[i] = c
	}
	for i, c := range cmds { // started together: each waits for nothing but its start
		if err := c.Start(); err != nil {
			for _, o := range cmds[:i] {
				o.Process.Kill()
				o.Wait()
			}
			return nil, err
		}
	}
	var failed error
	for i, c := range cmds {
		if err := c.Wait(); err != nil && failed == nil {
			failed = fmt.Errorf("node %d: %v\n%s", i, err, tail(outs[i].String()))
		}
	}
	if failed != nil {
		return nil, failed
	}
	nodes := make([]Node, n)
	for i, o := range outs {
		m := summaryLine.FindStringSubmatch(o.String())
		if m == nil {
			return nil, fmt.Errorf("node %d printed no v8 summary:\n%s", i, tail(o.String()))
		}
		nd := Node{Report: m[0]}
		var misses, aside int
		nd.Graphs, _ = strconv.Atoi(m[1])
		nd.Served, _ = strconv.Atoi(m[2])
		misses, _ = strconv.Atoi(m[3])
		aside, _ = strconv.Atoi(m[4])
		nd.Benchmarked = misses + aside
		for _, l := range lookupLine.FindAllStringSubmatch(o.String(), -1) {
			us, _ := strconv.ParseFloat(l[1], 64)
			nd.LongestLookup = max(nd.LongestLookup, time.Duration(us*1e3))
		}
		for _, l := range strings.Split(o.String(), "\n") {
			if strings.HasPrefix(l, "convcache: remote cache ") {
				nd.Warnings = append(nd.Warnings, l)
			}
		}
		nodes[i] = nd
	}
	return nodes, nil
}

// environ is this process's environment without the variables that would
// change what the nodes do.
func environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONVCACHE_") && !strings.HasPrefix(kv, "STANDIN_") && !strings.HasPrefix(kv, "LD_PRELOAD=") {
			out = append(out, kv)
		}
	}
	return out
}

// tail is the last lines of out that are not the event log.
func tail(out string) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "convcache,") {
			lines = append(lines, sc.Text())
		}
	}
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
