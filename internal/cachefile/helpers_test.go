package cachefile_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
)

// The tools' tests write files through the engine, as the processes whose
// files the tools read do.

func key(i int) []byte { return []byte(fmt.Sprintf("conv-key-%08d-%s", i, strings.Repeat("p", 80))) }
func val(i, v int) []byte {
	return []byte(fmt.Sprintf("algo=%d time=%d.%03d ver=%d pad....", i%8, i, v, v))
}

type env struct {
	t    *testing.T
	path string
}

func newEnv(t *testing.T) *env {
	return &env{t: t, path: filepath.Join(t.TempDir(), "cache.ccdb")}
}

func (e *env) open(o cache.Options) *cache.Cache {
	e.t.Helper()
	if o.LockTimeout == 0 {
		o.LockTimeout = time.Minute // a loaded machine must not fail an insert
	}
	c, err := cache.Open(e.path, &o)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

func mustInsert(t *testing.T, c *cache.Cache, k, v []byte) {
	t.Helper()
	if err := c.Insert(k, v); err != nil {
		t.Fatal(err)
	}
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
