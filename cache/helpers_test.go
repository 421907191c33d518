package cache_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
)

// Helpers shared by the engine's tests.

func key(i int) []byte { return []byte(fmt.Sprintf("conv-key-%08d-%s", i, strings.Repeat("p", 80))) }
func val(i, v int) []byte {
	return []byte(fmt.Sprintf("algo=%d time=%d.%03d ver=%d pad....", i%8, i, v, v))
}

type env struct {
	t    *testing.T
	path string
	warn *bytes.Buffer
	mu   sync.Mutex
}

func newEnv(t *testing.T) *env {
	return &env{t: t, path: filepath.Join(t.TempDir(), "cache.ccdb"), warn: &bytes.Buffer{}}
}

func (e *env) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.warn.Write(p)
}

func (e *env) warnings() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.warn.String()
}

func (e *env) open(o cache.Options) *cache.Cache {
	e.t.Helper()
	o.Warn = e
	if o.LockTimeout == 0 {
		// Inserts under contention must not fail with ErrPending because a
		// loaded machine held them up: only tests of the timeout set one.
		o.LockTimeout = time.Minute
	}
	c, err := cache.Open(e.path, &o)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

func mustGet(t *testing.T, c *cache.Cache, k, want []byte) {
	t.Helper()
	v, ok, err := c.Get(k)
	if err != nil || !ok || !bytes.Equal(v, want) {
		t.Fatalf("get %q: %q %v %v, want %q", k[:16], v, ok, err, want)
	}
}

func mustMiss(t *testing.T, c *cache.Cache, k []byte) {
	t.Helper()
	if v, ok, err := c.Get(k); ok || err != nil {
		t.Fatalf("get %q: %q %v %v, want a miss", k[:16], v, ok, err)
	}
}

func mustInsert(t *testing.T, c *cache.Cache, k, v []byte) {
	t.Helper()
	if err := c.Insert(k, v); err != nil {
		t.Fatal(err)
	}
}
