package remote_test

import (
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/remote"
)

// The calls for a key about to be built wait up to the build deadline:
// behind a server whose every reply comes 200 ms late, plain lookups (50
// ms) fail open, and mark the server down for plain lookups only; the
// build's lookup and lock still get their answers.
func TestBuildCallsWaitLonger(t *testing.T) {
	srv := startRedis(t)
	proxy := startProxy(t, srv.addr(), 0)
	r, warn := newRemote(t, proxy.url(), func(o *remote.Options) {
		o.Timeout = 50 * time.Millisecond
		o.BuildTimeout = 0 // the default, 1 s
	})
	other, _ := newRemote(t, srv.url(), nil)
	other.Put("test-scope", key(1), value(1))
	other.Flush()
	if !waitFor(30*time.Second, func() bool { return !r.Down() }) { // the writer loop's first ping
		t.Fatal("the tier did not connect")
	}
	proxy.setDelay(200 * time.Millisecond)

	if _, ok := r.Get("test-scope", key(1)); ok || !r.Down() {
		t.Fatalf("a plain lookup 200 ms late: hit %v, down %v; want a miss that marks it down", ok, r.Down())
	}
	if _, ok := r.Get("test-scope", key(1)); ok {
		t.Fatal("a plain lookup of a server marked down asked it")
	}
	if v, ok := r.GetBuild("test-scope", key(1)); !ok || string(v) != string(value(1)) {
		t.Fatalf("a build's lookup of a server marked down (slow, not gone): %q %v; want the value", v, ok)
	}
	unlock, ok := r.TryLockBuild("test-scope", key(2))
	if !ok {
		t.Fatal("a build's lock was refused")
	}
	if _, held := other.TryLock("test-scope", key(2)); held {
		t.Fatal("the build's lock was granted without being taken")
	}
	unlock()
	if !waitFor(30*time.Second, func() bool {
		u, ok := other.TryLock("test-scope", key(2))
		if ok {
			u()
		}
		return ok
	}) {
		t.Fatal("the build's lock was never released")
	}
	if w := warn.String(); warn.lines() != 1 || !strings.Contains(w, "is slow (no answer within the timeout)") ||
		!strings.Contains(w, "lookups that would start a benchmark still wait for it up to 1s") {
		t.Fatalf("the warning: %q", w)
	}
}

// Two nodes, each its own file, one Redis behind a proxy that delivers
// every reply 200 ms late, build the same 12 keys at the same time with the
// default deadlines: each key is built once between them.
func TestTwoNodesSlowRedisBuildOnce(t *testing.T) {
	srv := startRedis(t)
	proxy := startProxy(t, srv.addr(), 200*time.Millisecond)
	dir := t.TempDir()
	const keys = 12
	var builds atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for n := 0; n < 2; n++ {
		r, _ := newRemote(t, proxy.url(), func(o *remote.Options) {
			o.Timeout, o.BuildTimeout = remote.DefaultTimeout, 0
			o.MACKey = clusterKey
		})
		c := openCache(t, filepath.Join(dir, []string{"a.ccdb", "b.ccdb"}[n]), r, cache.ModeReadWrite)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			dst := make([]byte, 64)
			for i := 0; i < keys; i++ {
				// A plain lookup first, as the interposer makes: 200 ms
				// late, it marks the server down for plain lookups.
				c.Find(key(i), dst)
				_, _, err := c.GetOrCreate(key(i), dst, func(d []byte) (int, error) {
					builds.Add(1)
					time.Sleep(20 * time.Millisecond) // a benchmark
					return copy(d, value(i)), nil
				})
				if err != nil {
					t.Errorf("get_or_create %d: %v", i, err)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if b := builds.Load(); b != keys {
		t.Fatalf("%d builds of %d keys by two nodes behind a 200 ms proxy: want each built once", b, keys)
	}
}

// With Redis down (connection refused) or silent (answering nothing), a
// build's calls fail open, none waiting past the build deadline.
func TestBuildCallsRedisDown(t *testing.T) {
	srv := startRedis(t)
	silent := startProxy(t, srv.addr(), time.Hour)
	const build = 300 * time.Millisecond
	for _, c := range []struct{ name, url string }{
		{"refused", closedPortURL(t)},
		{"silent", silent.url()},
	} {
		r, _ := newRemote(t, c.url, func(o *remote.Options) {
			o.Timeout, o.BuildTimeout = 50*time.Millisecond, build
		})
		ch := openCache(t, filepath.Join(t.TempDir(), "c.ccdb"), r, cache.ModeReadWrite)
		dst := make([]byte, 64)
		var worst time.Duration
		for i := 0; i < 5; i++ {
			t0 := time.Now()
			_, built, err := ch.GetOrCreate(key(i), dst, func(d []byte) (int, error) { return copy(d, value(i)), nil })
			d := time.Since(t0)
			worst = max(worst, d)
			if err != nil || !built {
				t.Fatalf("%s: get_or_create %d: built %v, %v", c.name, i, built, err)
			}
			if d > build+slack {
				t.Fatalf("%s: get_or_create %d took %v; the build deadline is %v", c.name, i, d, build)
			}
			for _, call := range []func(){
				func() { r.GetBuild("test-scope", key(100+i)) },
				func() {
					if u, ok := r.TryLockBuild("test-scope", key(200+i)); ok {
						u()
					}
				},
			} {
				t0 = time.Now()
				call()
				if d := time.Since(t0); d > build+slack {
					t.Fatalf("%s: a build's call took %v; the build deadline is %v", c.name, d, build)
				} else {
					worst = max(worst, d)
				}
			}
		}
		t.Logf("Redis %s: the longest call took %v (build deadline %v)", c.name, worst, build)
	}
}
