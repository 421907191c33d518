package remote_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/convcache/convcache/remote/internal/v8nodes"
)

// v8Setup returns what the two-node runs of PyTorch's default-path
// sequence need: CONVCACHE_TEST_BUILD (make remote-v8-test sets it) with
// convcache, the interposer and tests/v8fe/torch_like. Skipped without it.
func v8Setup(t *testing.T, url string) v8nodes.Setup {
	b := os.Getenv("CONVCACHE_TEST_BUILD")
	if b == "" {
		t.Skip("CONVCACHE_TEST_BUILD is not set: make remote-v8-test runs this test with the programs it builds")
	}
	prog := filepath.Join(b, "tests/v8fe/torch_like")
	for _, p := range []string{filepath.Join(b, "convcache"), filepath.Join(b, "libconvcache_preload.so"), prog} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("CONVCACHE_TEST_BUILD=%s: %v", b, err)
		}
	}
	return v8nodes.Setup{Build: b, Prog: prog, Dir: t.TempDir(), URL: url,
		Env: []string{"CONVCACHE_REMOTE_KEY=" + string(clusterKey)}}
}

// Two nodes of PyTorch's default-path sequence (the real cudnn_frontend on
// the stand-in cuDNN, under convcache run), each with its own file, one
// real Redis behind a proxy that delivers every reply 200 ms late, started
// together with the default deadlines: between them each graph is
// benchmarked once. With Redis down, both complete, each benchmarking
// every graph, and no lookup waits past the build deadline.
func TestTwoNodesV8SlowRedis(t *testing.T) {
	srv := startRedis(t)
	proxy := startProxy(t, srv.addr(), 0)
	s := v8Setup(t, proxy.url())

	// What one node alone benchmarks: the graphs there are.
	one, err := v8nodes.Run(s, "alone", 1)
	if err != nil {
		t.Fatal(err)
	}
	graphs := one[0].Benchmarked
	if graphs == 0 || one[0].Served != 0 {
		t.Fatalf("a cold node alone: %s", one[0].Report)
	}
	srv.client().FlushAll(t.Context())

	proxy.setDelay(200 * time.Millisecond)
	two, err := v8nodes.Run(s, "slow", 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range two {
		t.Logf("behind a 200 ms proxy, node %d: %s %q", i, n.Report, n.Warnings)
	}
	if b := two[0].Benchmarked + two[1].Benchmarked; b != graphs {
		t.Fatalf("two nodes behind a 200 ms proxy benchmarked %d graphs between them (%d and %d); there are %d: want each once",
			b, two[0].Benchmarked, two[1].Benchmarked, graphs)
	}

	// Redis down: nothing shared, nothing waits for it.
	down := s
	down.URL = closedPortURL(t)
	two, err = v8nodes.Run(down, "down", 2)
	if err != nil {
		t.Fatal(err)
	}
	const deadline = time.Second // CONVCACHE_REMOTE_BUILD_TIMEOUT_MS's default
	for i, n := range two {
		t.Logf("Redis down, node %d: %s; longest lookup %v", i, n.Report, n.LongestLookup)
		if n.Benchmarked != graphs || n.LongestLookup > deadline+slack {
			t.Errorf("Redis down, node %d: %d graphs benchmarked (want %d), longest lookup %v (deadline %v)",
				i, n.Benchmarked, graphs, n.LongestLookup, deadline)
		}
	}
}
