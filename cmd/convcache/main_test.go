package main

// The tests run the real convcache binary, built once by TestMain, against
// real cache files written by package cache.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/cudnn"
	"github.com/convcache/convcache/internal/cachefile"
)

var binary string

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child(os.Getenv(childEnv))) // this process is a command that a test runs
	}
	dir, err := os.MkdirTemp("", "convcache-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Interrupted, remove the binary too (t.TempDir cleans up the rest).
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-stop
		os.RemoveAll(dir)
		signal.Reset()
		syscall.Kill(os.Getpid(), s.(syscall.Signal))
	}()
	binary = filepath.Join(dir, "convcache")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building convcache: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs the binary with a clean convcache environment plus env
// ("NAME=value"), in a temporary HOME.
func cli(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(cleanEnv(t), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := result{so.String(), se.String(), 0}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running convcache %v: %v", args, err)
		}
		r.code = ee.ExitCode()
	}
	return r
}

// cleanEnv is this process's environment without convcache's variables,
// with a temporary HOME.
func cleanEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONVCACHE_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+t.TempDir())
}

// mustRun runs the binary and fails the test unless it exits with want.
func mustRun(t *testing.T, want int, env []string, args ...string) result {
	t.Helper()
	r := cli(t, env, args...)
	if r.code != want {
		t.Fatalf("convcache %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
}

// v7 starts the names of PyTorch's three caches as the README's patch
// names them ("torch.cudnn.v7.fwd"): names that say the values are cuDNN
// perf structs.
const v7 = "torch.cudnn.v7."

// Entries as PyTorch stores them through convcache.hpp: a name, NUL,
// ConvolutionParams -> one perf struct.

func params(n, c, hw, k int32) cudnn.Params {
	return cudnn.Params{
		InputSize: [5]int32{n, c, hw, hw}, InputDim: 4,
		WeightSize: [5]int32{k, c, 3, 3},
		Padding:    [3]int32{1, 1}, Stride: [3]int32{1, 1}, Dilation: [3]int32{1, 1},
		Groups: 1,
	}
}

func torchKey(name string, p cudnn.Params) []byte {
	return p.Append(append([]byte(name), 0))
}

func perf(algo int32, ms float32) []byte {
	return cudnn.Perf{Algo: algo, Time: ms, Determinism: 1}.Append(nil)
}

// entry builds a tools entry with explicit times.
func entry(scope string, key, value []byte, inserted, used time.Time) cachefile.Entry {
	return cachefile.Entry{Scope: scope, Key: key, Value: value, Inserted: inserted, Used: used}
}

// writeFile writes a new cache file holding entries.
func writeFile(t *testing.T, path string, entries ...cachefile.Entry) {
	t.Helper()
	if err := cachefile.WriteNew(path, entries); err != nil {
		t.Fatal(err)
	}
}

// liveCache inserts entries through the engine, one handle per scope, so
// the file has a journal as a running job leaves it.
func liveCache(t *testing.T, path string, scope string, kv ...[]byte) {
	t.Helper()
	c, err := cache.Open(path, &cache.Options{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i+1 < len(kv); i += 2 {
		if err := c.Insert(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
}

const (
	gpuA = "cc1;gpu=NVIDIA H100 80GB HBM3;cc=9.0;sms=132;driver=13000;cudnn=91300;cudart=13000"
	gpuB = "cc1;gpu=NVIDIA A100-SXM4-80GB;cc=8.0;sms=108;driver=12040;cudnn=90100;cudart=12040"
)

// sampleCache writes a small cache with two scopes: three PyTorch entries
// under gpuA, one of them decoded in full in the tests, and an entry of
// unknown layout under gpuB.
func sampleCache(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.ccdb")
	liveCache(t, path, gpuA,
		torchKey(v7+"fwd", params(32, 64, 56, 64)), perf(1, 0.12),
		torchKey(v7+"bwd_data", params(32, 64, 56, 64)), perf(0, 0.31),
		torchKey(v7+"bwd_filter", params(32, 128, 28, 128)), perf(3, 0.5),
	)
	liveCache(t, path, gpuB, []byte("opaque-key"), []byte{0xde, 0xad, 0xbe, 0xef})
	return path
}
