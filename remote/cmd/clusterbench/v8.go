package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/convcache/convcache/remote/internal/redistest"
	"github.com/convcache/convcache/remote/internal/v8nodes"
)

var v8Build = flag.String("v8", "", "also run two nodes of PyTorch's default-path sequence from this build directory "+
	"(convcache, the interposer, tests/v8fe/torch_like), with each reply 0 and 200 ms late and with Redis down")

// twoNodesV8 runs two nodes of the real-frontend sequence (v8nodes)
// started together, on one Redis reached directly, behind proxies that
// deliver every reply late, and with nothing listening, and prints how
// many graphs both nodes benchmarked.
func twoNodesV8(dir, addr string, admin *redis.Client) error {
	b, err := filepath.Abs(*v8Build)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	s := v8nodes.Setup{Build: b, Prog: filepath.Join(b, "tests/v8fe/torch_like"), Dir: dir}
	if k := macKey(); k != nil {
		s.Env = []string{"CONVCACHE_REMOTE_KEY=" + string(k)}
	}
	fmt.Print("\n## Two nodes of PyTorch's default path (real cudnn_frontend, stand-in cuDNN), started together\n\n")
	fmt.Println("Default deadlines: CONVCACHE_REMOTE_TIMEOUT_MS 50, CONVCACHE_REMOTE_BUILD_TIMEOUT_MS 1000.")
	fmt.Println()
	fmt.Println("| Redis | node 1 benchmarked | node 2 benchmarked | graphs | benchmarked by both | longest lookup |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	port, err := redistest.FreePort()
	if err != nil {
		return err
	}
	for i, c := range []struct {
		name  string
		delay int // ms; -1: nothing listens
	}{{"reached directly", 0}, {"every reply 200 ms late", 200}, {"down (connection refused)", -1}} {
		s.URL = "redis://" + addr + "/0"
		switch {
		case c.delay > 0:
			p, err := redistest.NewDelayProxy(addr, time.Duration(c.delay)*time.Millisecond)
			if err != nil {
				return err
			}
			defer p.Close()
			s.URL = p.URL()
		case c.delay < 0:
			s.URL = "redis://127.0.0.1:" + strconv.Itoa(port) + "/0"
		}
		admin.FlushAll(context.Background())
		nodes, err := v8nodes.Run(s, fmt.Sprintf("v8-%d", i), 2)
		if err != nil {
			return err
		}
		graphs := max(nodes[0].Graphs, nodes[1].Graphs)
		both := nodes[0].Benchmarked + nodes[1].Benchmarked - graphs
		fmt.Printf("| %s | %d | %d | %d | %d | %s |\n", c.name, nodes[0].Benchmarked, nodes[1].Benchmarked, graphs, max(both, 0),
			ms(max(nodes[0].LongestLookup, nodes[1].LongestLookup)))
	}
	return nil
}
