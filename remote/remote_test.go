package remote_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/remote"
)

// slack is how much longer than the remote deadline a call may take in
// these tests: scheduling on a loaded machine, the race detector, a local
// file append. It stays well below the 3 s by which the slow servers here
// answer late, so a call that waited for one still fails the bound.
const slack = time.Second

// fsyncSlack replaces slack for a Save, which also fsyncs the local file: a
// loaded disk can take that long without any help from Redis. The servers
// these tests make slow are slower still (3 s).
const fsyncSlack = 2 * time.Second

func newRemote(t testing.TB, url string, mod func(*remote.Options)) (*remote.Client, *syncBuffer) {
	t.Helper()
	w := &syncBuffer{}
	// A generous deadline unless the test is about the deadline: a loaded
	// machine must not make a functional test fail open.
	o := remote.Options{URL: url, Warn: w, Timeout: 2 * time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	r, err := remote.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, w
}

func openCache(t testing.TB, path string, r cache.Remote, mode cache.Mode) *cache.Cache {
	t.Helper()
	c, err := cache.Open(path, &cache.Options{Scope: "test-scope", Remote: r, Mode: mode, Warn: &syncBuffer{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func key(i int) []byte   { return []byte(fmt.Sprintf("conv shape %06d", i)) }
func value(i int) []byte { return []byte(fmt.Sprintf("algo %d ws %d", i%8, i*4096)) }

func find(t testing.TB, c *cache.Cache, k []byte) ([]byte, bool) {
	t.Helper()
	v, ok, err := c.Get(k)
	if err != nil {
		t.Fatalf("find %q: %v", k, err)
	}
	return v, ok
}

// clusterKey is the record MAC key the cluster tests share.
var clusterKey = []byte("the cluster's record key, 32 B.")

func withKey(o *remote.Options) { o.MACKey = clusterKey }

// One node's inserts reach another node, with its own file, as remote hits
// that then live in its file (they are authenticated: the nodes share a MAC
// key); local hits never reach the network.
func TestReadThroughWriteBehind(t *testing.T) {
	srv := startRedis(t)
	dir := t.TempDir()
	ra, warnA := newRemote(t, srv.url(), withKey)
	rb, _ := newRemote(t, srv.url(), withKey)
	a := openCache(t, filepath.Join(dir, "a.ccdb"), ra, cache.ModeReadWrite)
	b := openCache(t, filepath.Join(dir, "b.ccdb"), rb, cache.ModeReadWrite)
	for i := 0; i < 300; i++ {
		if err := a.Insert(key(i), value(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	if st := ra.Stats(); st.Writes != 300 || st.Dropped != 0 || ra.Queued() != 0 {
		t.Fatalf("after Save: %+v, %d queued; want 300 writes (%s)", st, ra.Queued(), warnA)
	}
	for i := 0; i < 300; i++ {
		if v, ok := find(t, b, key(i)); !ok || string(v) != string(value(i)) {
			t.Fatalf("node B, key %d: %q %v", i, v, ok)
		}
	}
	if st := rb.Stats(); st.Hits != 300 || st.Misses != 0 || st.Errors != 0 || st.Rejected != 0 {
		t.Fatalf("node B remote stats %+v", st)
	}
	if st := b.Stats(); st.Remote.Hits != 300 || st.Entries != 300 {
		t.Fatalf("node B engine stats %+v", st)
	}
	// Second lookups are local: no network round trip.
	direct := srv.client()
	before := srv.calls(direct)
	for i := 0; i < 300; i++ {
		find(t, b, key(i))
		find(t, a, key(i))
	}
	assertNoCalls(t, before, srv.calls(direct))
	// The remote hits were written to B's file.
	b.Close()
	b2 := openCache(t, filepath.Join(dir, "b.ccdb"), nil, cache.ModeReadWrite)
	for i := 0; i < 300; i++ {
		if v, ok := find(t, b2, key(i)); !ok || string(v) != string(value(i)) {
			t.Fatalf("B's file lacks key %d", i)
		}
	}
	// A miss everywhere is a counted remote miss.
	if _, ok := find(t, a, key(999)); ok {
		t.Fatal("hit on a key nobody inserted")
	}
	if st := ra.Stats(); st.Misses != 1 {
		t.Fatalf("remote misses %d, want 1", st.Misses)
	}
}

// assertNoCalls fails if the server ran any command between two
// commandstats snapshots other than the INFO that took them.
func assertNoCalls(t testing.TB, before, after map[string]int) {
	t.Helper()
	for name, n := range after {
		if name != "info" && n != before[name] {
			t.Fatalf("the server ran %d %s call(s) during local hits", n-before[name], name)
		}
	}
}

// The server is killed in the middle of a run: calls keep working from the
// local file, none waits longer than the deadline, one warning is printed,
// and the writes queued meanwhile reach the server once it is back.
func TestRedisStopped(t *testing.T) {
	srv := startRedis(t)
	const timeout = 100 * time.Millisecond
	r, warn := newRemote(t, srv.url(), func(o *remote.Options) { o.Timeout = timeout })
	c := openCache(t, filepath.Join(t.TempDir(), "c.ccdb"), r, cache.ModeReadWrite)
	if err := c.Insert(key(0), value(0)); err != nil {
		t.Fatal(err)
	}
	c.Save()
	srv.stop()

	var worst, worstSave time.Duration
	timed := func(f func()) {
		t0 := time.Now()
		f()
		worst = max(worst, time.Since(t0))
	}
	dst := make([]byte, 64)
	for i := 1; i <= 40; i++ {
		timed(func() {
			if err := c.Insert(key(i), value(i)); err != nil {
				t.Fatal(err)
			}
		})
		timed(func() {
			if v, ok := find(t, c, key(i)); !ok || string(v) != string(value(i)) {
				t.Fatalf("local hit lost while the server is down: key %d", i)
			}
		})
		timed(func() {
			if _, ok := find(t, c, key(1000+i)); ok {
				t.Fatal("hit on a missing key")
			}
		})
		timed(func() {
			n, built, err := c.GetOrCreate(key(2000+i), dst, func(d []byte) (int, error) { return copy(d, value(2000+i)), nil })
			if err != nil || !built || string(dst[:n]) != string(value(2000+i)) {
				t.Fatalf("GetOrCreate while down: %v built=%v", err, built)
			}
		})
		t0 := time.Now()
		if err := c.Save(); err != nil {
			t.Fatal(err)
		}
		worstSave = max(worstSave, time.Since(t0))
	}
	t.Logf("slowest call while the server was down: %v, save %v (deadline %v)", worst, worstSave, timeout)
	if worst > timeout+slack || worstSave > timeout+fsyncSlack {
		t.Fatalf("a call took %v, a save %v with the server down; the deadline is %v", worst, worstSave, timeout)
	}
	st := r.Stats()
	if st.Errors == 0 || !r.Down() {
		t.Fatalf("server down but errors=%d down=%v", st.Errors, r.Down())
	}
	if n := warn.lines(); n != 1 || !strings.Contains(warn.String(), "unavailable") {
		t.Fatalf("want one warning line, got %d: %q", n, warn.String())
	}

	srv.restart()
	if !waitFor(30*time.Second, func() bool { return !r.Down() }) {
		t.Fatal("the tier did not reconnect within 30 s of the restart")
	}
	if err := c.Insert(key(500), value(500)); err != nil {
		t.Fatal(err)
	}
	direct := srv.client()
	ctx := context.Background()
	// Writes resume: what was inserted while the server was down (still
	// queued) and what is inserted now both arrive.
	want := []int{500}
	for i := 1; i <= 40; i++ {
		want = append(want, i, 2000+i)
	}
	ok := waitFor(30*time.Second, func() bool {
		c.Save()
		for _, i := range want {
			if n, _ := direct.Exists(ctx, remote.EntryKey(remote.DefaultPrefix, "test-scope", key(i))).Result(); n != 1 {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("writes did not resume after the restart: %+v, %d queued", r.Stats(), r.Queued())
	}
	if n := warn.lines(); n != 1 {
		t.Fatalf("%d warning lines after recovery, want still 1: %q", n, warn.String())
	}
}

// A slow server (a proxy that delays every reply by 3 s) never makes a call
// wait much longer than the deadline.
func TestSlowRedis(t *testing.T) {
	srv := startRedis(t)
	proxy := startProxy(t, srv.addr(), 0)
	const timeout = 50 * time.Millisecond
	r, warn := newRemote(t, proxy.url(), func(o *remote.Options) {
		o.Timeout = timeout
		o.MinBackoff = 10 * time.Millisecond
		o.MaxBackoff = 20 * time.Millisecond
	})
	c := openCache(t, filepath.Join(t.TempDir(), "c.ccdb"), r, cache.ModeReadWrite)

	// Another node's entry, read through the proxy while it is fast enough.
	other, _ := newRemote(t, srv.url(), nil)
	other.Put("test-scope", key(1), value(1))
	other.Flush()
	proxy.setDelay(10 * time.Millisecond)
	// A loaded machine can miss the 50 ms deadline even so: the tier is then
	// marked down until it reconnects, and a later lookup gets the hit.
	var v []byte
	var ok bool
	if !waitFor(30*time.Second, func() bool {
		v, ok = find(t, c, key(1))
		return ok
	}) || string(v) != string(value(1)) {
		t.Fatalf("remote hit through the proxy at 10 ms: %q %v (%+v)", v, ok, r.Stats())
	}

	dst := make([]byte, 64)
	ops := []struct {
		name string
		f    func(i int)
	}{
		{"find (miss)", func(i int) { find(t, c, key(100+i)) }},
		{"get_or_create", func(i int) {
			c.GetOrCreate(key(200+i), dst, func(d []byte) (int, error) { return copy(d, "v"), nil })
		}},
		{"insert", func(i int) { c.Insert(key(300+i), value(i)) }},
		{"save", func(i int) { c.Insert(key(400+i), value(i)); c.Save() }},
		{"remote get", func(i int) { r.Get("test-scope", key(500+i)) }},
		{"remote lock", func(i int) {
			if unlock, ok := r.TryLock("test-scope", key(600+i)); ok {
				unlock()
			}
		}},
		{"remote flush", func(i int) { r.Put("test-scope", key(700+i), value(i)); r.Flush() }},
	}
	waited := 0
	worst := map[string]time.Duration{}
	for round := 0; round < 3; round++ {
		for _, op := range ops {
			// Healthy and fast, then slow: the next call meets the slow
			// server rather than a tier already marked down.
			proxy.setDelay(0)
			if !waitFor(30*time.Second, func() bool { return !r.Down() }) {
				t.Fatal("tier did not recover with the proxy fast again")
			}
			proxy.setDelay(3 * time.Second)
			errs := r.Stats().Errors
			t0 := time.Now()
			op.f(round)
			d := time.Since(t0)
			worst[op.name] = max(worst[op.name], d)
			if r.Stats().Errors > errs {
				waited++
			}
			bound := timeout + slack
			if op.name == "save" {
				bound = timeout + fsyncSlack
			}
			if d > bound {
				t.Fatalf("%s took %v against a server 3 s slow; the deadline is %v", op.name, d, timeout)
			}
		}
	}
	t.Logf("slowest calls against a server 3 s slow, deadline %v: %v", timeout, worst)
	if waited < len(ops) {
		t.Fatalf("only %d calls met the slow server: the test did not test the bound", waited)
	}
	// Once marked down, calls do not wait at all.
	proxy.setDelay(3 * time.Second)
	r.Get("test-scope", key(9))
	t0 := time.Now()
	for i := 0; i < 100; i++ {
		find(t, c, key(10000+i))
	}
	if d := time.Since(t0); d > slack {
		t.Fatalf("100 misses against a server marked down took %v", d)
	}
	if warn.lines() != 1 {
		t.Fatalf("want one warning line, got %q", warn.String())
	}
	t0 = time.Now()
	c.Close()
	if d := time.Since(t0); d > timeout+slack {
		t.Fatalf("close took %v", d)
	}
}

// A server that refuses connections, or answers garbage, or refuses the
// password, is local-only behaviour within the deadline.
func TestBrokenServers(t *testing.T) {
	srv := startRedis(t, "--requirepass", "s3cret")
	for _, tc := range []struct{ name, url string }{
		{"refused", closedPortURL(t)},
		{"garbage", garbageServer(t)},
		{"wrong password", "redis://:wrong-pass@" + srv.addr() + "/0"},
		{"no password", srv.url()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const timeout = 100 * time.Millisecond
			r, warn := newRemote(t, tc.url, func(o *remote.Options) { o.Timeout = timeout })
			c := openCache(t, filepath.Join(t.TempDir(), "c.ccdb"), r, cache.ModeReadWrite)
			dst := make([]byte, 8)
			var worst, worstSave time.Duration
			timed := func(w *time.Duration, f func()) {
				t0 := time.Now()
				f()
				*w = max(*w, time.Since(t0))
			}
			for i := 0; i < 20; i++ {
				timed(&worst, func() {
					if _, ok := find(t, c, key(i)); ok {
						t.Fatal("hit from a broken server")
					}
				})
				timed(&worst, func() {
					if err := c.Insert(key(i), value(i)); err != nil {
						t.Fatal(err)
					}
				})
				timed(&worst, func() {
					_, built, err := c.GetOrCreate(key(100+i), dst, func(d []byte) (int, error) { return copy(d, "x"), nil })
					if err != nil || !built {
						t.Fatalf("GetOrCreate: %v %v", built, err)
					}
				})
				timed(&worstSave, func() { c.Save() })
			}
			if worst > timeout+slack || worstSave > timeout+fsyncSlack {
				t.Fatalf("against a broken server a call took %v, a save %v; deadline %v", worst, worstSave, timeout)
			}
			if st := r.Stats(); st.Errors == 0 || st.Hits != 0 || st.Writes != 0 {
				t.Fatalf("stats %+v", st)
			}
			if warn.lines() != 1 {
				t.Fatalf("want one warning line, got %q", warn.String())
			}
			if strings.Contains(warn.String(), "wrong-pass") {
				t.Fatalf("the warning shows the password: %q", warn.String())
			}
		})
	}
	t.Run("right password", func(t *testing.T) {
		r, warn := newRemote(t, "redis://:s3cret@"+srv.addr()+"/3", nil)
		r.Put("s", []byte("k"), []byte("v"))
		r.Flush()
		if v, ok := r.Get("s", []byte("k")); !ok || string(v) != "v" {
			t.Fatalf("get with the right password: %q %v %+v %q", v, ok, r.Stats(), warn.String())
		}
	})
}

// Values written straight into Redis that are not what was asked for are
// never returned, and are counted.
func TestPoisonedValues(t *testing.T) {
	srv := startRedis(t)
	r, _ := newRemote(t, srv.url(), func(o *remote.Options) { o.MaxValue = 64 })
	dir := t.TempDir()
	c := openCache(t, filepath.Join(dir, "c.ccdb"), r, cache.ModeReadWrite)
	direct := srv.client()
	ctx := context.Background()
	const scope = "test-scope"
	k := []byte("conv shape poisoned")
	rk := remote.EntryKey(remote.DefaultPrefix, scope, k)
	good := remote.Record(scope, k, []byte("the real value"))
	flip := func(i int) []byte {
		b := append([]byte(nil), good...)
		b[i] ^= 0x40
		return b
	}
	for _, tc := range []struct {
		name string
		set  func() error
	}{
		{"garbage", func() error { return direct.Set(ctx, rk, "not a record", 0).Err() }},
		{"empty-looking", func() error { return direct.Set(ctx, rk, strings.Repeat("\x00", 40), 0).Err() }},
		{"other key", func() error {
			return direct.Set(ctx, rk, remote.Record(scope, []byte("conv shape other"), []byte("x")), 0).Err()
		}},
		{"other scope", func() error { return direct.Set(ctx, rk, remote.Record("other-scope", k, []byte("x")), 0).Err() }},
		{"bad checksum", func() error { return direct.Set(ctx, rk, flip(len(good)-1), 0).Err() }},
		{"flipped value", func() error { return direct.Set(ctx, rk, flip(len(good)-6), 0).Err() }},
		{"truncated", func() error { return direct.Set(ctx, rk, good[:len(good)-3], 0).Err() }},
		{"newer version", func() error { return direct.Set(ctx, rk, flip(4), 0).Err() }},
		{"over the size limit", func() error {
			return direct.Set(ctx, rk, remote.Record(scope, k, []byte(strings.Repeat("v", 65))), 0).Err()
		}},
		{"huge", func() error { return direct.Set(ctx, rk, strings.Repeat("g", 2<<20), 0).Err() }},
		{"a list", func() error { direct.Del(ctx, rk); return direct.RPush(ctx, rk, "a", "b").Err() }},
		{"a hash", func() error { direct.Del(ctx, rk); return direct.HSet(ctx, rk, "f", good).Err() }},
	} {
		direct.Del(ctx, rk)
		if err := tc.set(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		before := r.Stats().Rejected
		if v, ok := r.Get(scope, k); ok {
			t.Fatalf("%s: returned %q", tc.name, v)
		}
		if _, ok := find(t, c, k); ok {
			t.Fatalf("%s: the cache returned a poisoned value", tc.name)
		}
		if got := r.Stats().Rejected - before; got != 2 {
			t.Fatalf("%s: rejected %d, want 2", tc.name, got)
		}
	}
	if st := c.Stats(); st.Entries != 0 {
		t.Fatalf("poisoned values reached the local file: %d entries", st.Entries)
	}
	// The builder runs in spite of the poison, and its value replaces it.
	dst := make([]byte, 64)
	n, built, err := c.GetOrCreate(k, dst, func(d []byte) (int, error) { return copy(d, "built"), nil })
	if err != nil || !built || string(dst[:n]) != "built" {
		t.Fatalf("GetOrCreate over poison: %q built=%v err=%v", dst[:n], built, err)
	}
	// The built value goes to the server behind the caller's back: wait for
	// it, or it could land after the good record below.
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	direct.Del(ctx, rk)
	direct.Set(ctx, rk, good, 0)
	if v, ok := r.Get(scope, k); !ok || string(v) != "the real value" {
		t.Fatalf("a good record after the poison: %q %v", v, ok)
	}
}

// In read-only mode nothing is written to the server: no entries, no locks;
// lookups still read through.
func TestReadOnly(t *testing.T) {
	srv := startRedis(t)
	direct := srv.client()
	ctx := context.Background()
	other, _ := newRemote(t, srv.url(), nil)
	other.Put("test-scope", key(1), value(1))
	other.Flush()
	other.Close()
	before := srv.calls(direct)

	for _, roRemote := range []bool{false, true} {
		r, _ := newRemote(t, srv.url(), func(o *remote.Options) { o.ReadOnly = roRemote })
		c := openCache(t, filepath.Join(t.TempDir(), "c.ccdb"), r, cache.ModeReadOnly)
		if v, ok := find(t, c, key(1)); !ok || string(v) != string(value(1)) {
			t.Fatalf("read-through in ro mode: %q %v", v, ok)
		}
		c.Insert(key(2), value(2))
		dst := make([]byte, 64)
		c.GetOrCreate(key(3), dst, func(d []byte) (int, error) { return copy(d, "v"), nil })
		c.Save()
		r.Put("test-scope", key(4), value(4)) // the engine never does this in ro
		r.Flush()
		if unlock, ok := r.TryLock("test-scope", key(5)); !ok {
			t.Fatal("lock refused in ro")
		} else {
			unlock()
		}
		r.Flush()
		c.Close()
	}
	// The engine in ro mode wrote nothing. The ReadOnly=false client's own
	// Put and TryLock made 2 SETs and an unlock script; the ReadOnly=true
	// client made none.
	after := srv.calls(direct)
	if got := after["set"] - before["set"]; got != 2 {
		t.Fatalf("%d SETs, want the 2 the test made itself", got)
	}
	if got := after["eval"] - before["eval"]; got != 1 {
		t.Fatalf("%d scripts, want 1", got)
	}
	if n, _ := direct.Exists(ctx, remote.EntryKey(remote.DefaultPrefix, "test-scope", key(2)),
		remote.EntryKey(remote.DefaultPrefix, "test-scope", key(3))).Result(); n != 0 {
		t.Fatalf("ro inserts reached the server")
	}
}

func TestTTL(t *testing.T) {
	srv := startRedis(t)
	direct := srv.client()
	ctx := context.Background()
	for _, ttl := range []time.Duration{0, 5 * time.Second} {
		r, _ := newRemote(t, srv.url(), func(o *remote.Options) { o.TTL = ttl })
		r.Put("s", key(int(ttl)), value(1))
		r.Flush()
		got, err := direct.PTTL(ctx, remote.EntryKey(remote.DefaultPrefix, "s", key(int(ttl)))).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl == 0 && got != -1 || ttl > 0 && (got <= 0 || got > ttl) {
			t.Fatalf("TTL %v: the key's TTL is %v", ttl, got)
		}
	}
}

// A full queue drops its oldest entries, never blocking; the newest reach
// the server when it is back.
func TestQueueFull(t *testing.T) {
	srv := startRedis(t)
	r, _ := newRemote(t, srv.url(), func(o *remote.Options) { o.QueueEntries = 10 })
	r.Put("s", key(-1), value(1))
	r.Flush()
	srv.stop()
	r.Get("s", key(0)) // notices
	if !r.Down() {
		t.Fatal("not marked down")
	}
	t0 := time.Now()
	for i := 0; i < 25; i++ {
		r.Put("s", key(i), value(i))
	}
	if d := time.Since(t0); d > slack {
		t.Fatalf("25 puts took %v", d)
	}
	if st := r.Stats(); st.Dropped != 15 || r.Queued() != 10 {
		t.Fatalf("dropped %d, queued %d; want 15 and 10", st.Dropped, r.Queued())
	}
	srv.restart()
	direct := srv.client()
	ctx := context.Background()
	if !waitFor(30*time.Second, func() bool { return r.Queued() == 0 && !r.Down() }) {
		t.Fatal("queue not sent after the restart")
	}
	for i := 0; i < 25; i++ {
		n, _ := direct.Exists(ctx, remote.EntryKey(remote.DefaultPrefix, "s", key(i))).Result()
		if (i >= 15) != (n == 1) {
			t.Fatalf("key %d exists=%d: want only the newest 10 (15..24)", i, n)
		}
	}
	if st := r.Stats(); st.Writes != 11 {
		t.Fatalf("writes %d, want 11", st.Writes)
	}
}

// The cluster lock: held while renewed, freed by unlock, freed by its TTL
// when the holder dies, never deleted by a former holder.
func TestClusterLock(t *testing.T) {
	srv := startRedis(t)
	direct := srv.client()
	ctx := context.Background()
	// Renewal runs every third of the TTL: a renewal may be a whole TTL
	// late on a loaded machine before the lock lapses.
	const ttl = 1500 * time.Millisecond
	mk := func() *remote.Client {
		r, _ := newRemote(t, srv.url(), func(o *remote.Options) { o.LockTTL = ttl })
		return r
	}
	a, b := mk(), mk()
	k := []byte("cold shape")

	unlock, ok := a.TryLock("s", k)
	if !ok {
		t.Fatal("first lock refused")
	}
	// Renewed: still held after several TTLs.
	deadline := time.Now().Add(2 * ttl)
	for time.Now().Before(deadline) {
		if _, ok := b.TryLock("s", k); ok {
			t.Fatal("B took a lock A holds and renews")
		}
		time.Sleep(ttl / 5)
	}
	unlock()
	a.Flush()
	unlockB, ok := b.TryLock("s", k)
	if !ok {
		t.Fatal("lock not freed by unlock")
	}
	unlockB()
	b.Flush()

	// A holder that dies (its client closed without unlocking: no renewal,
	// no release) frees the lock by TTL.
	if _, ok := a.TryLock("s", k); !ok {
		t.Fatal("relock refused")
	}
	died := time.Now()
	a.Close()
	if _, ok := b.TryLock("s", k); ok {
		t.Fatal("lock free right after its holder died: the TTL should hold it")
	}
	var freed time.Duration
	if !waitFor(30*time.Second, func() bool {
		u, ok := b.TryLock("s", k)
		if ok {
			freed = time.Since(died)
			u()
		}
		return ok
	}) {
		t.Fatal("lock never freed by its TTL")
	}
	if freed > ttl+slack {
		t.Fatalf("freed %v after the holder died; TTL %v", freed, ttl)
	}
	b.Flush()

	// A former holder does not delete a lock that expired and went to
	// another node.
	c := mk()
	unlockC, ok := c.TryLock("s", k)
	if !ok {
		t.Fatal("lock refused")
	}
	lk := remote.LockKey(remote.DefaultPrefix, "s", k)
	direct.Set(ctx, lk, "another node's token", 0)
	// While C still believes it holds the lock, its renewals (every third
	// of the TTL) leave the other node's lock alone: one would cut the 10 s
	// left to 1.5 s.
	direct.PExpire(ctx, lk, 10*time.Second)
	time.Sleep(ttl)
	if d, _ := direct.PTTL(ctx, lk).Result(); d <= ttl {
		t.Fatalf("renewed someone else's lock: %v left", d)
	}
	unlockC()
	c.Flush()
	if v, _ := direct.Get(ctx, lk).Result(); v != "another node's token" {
		t.Fatalf("a former holder deleted another node's lock (now %q)", v)
	}
}

// URLs and options are checked by New, which does not connect.
func TestNew(t *testing.T) {
	for _, u := range []string{
		"", "localhost:6379", "http://host:6379", "redis://", "redis://:6379",
		"redis://host:99999", "redis://host:port", "redis://host/notanumber", "unix:///tmp/sock",
	} {
		if _, err := remote.New(remote.Options{URL: u}); !errors.Is(err, remote.ErrURL) {
			t.Errorf("New(%q) = %v, want ErrURL", u, err)
		}
	}
	for _, u := range []string{
		"redis://host", "redis://host:6380/2", "redis://user:pass@host:1/0", "rediss://host:6380/0", " redis://h/1 ",
	} {
		r, err := remote.New(remote.Options{URL: u})
		if err != nil {
			t.Errorf("New(%q): %v", u, err)
			continue
		}
		if strings.Contains(r.String(), "pass@") {
			t.Errorf("String() shows the password: %s", r)
		}
		r.Close()
	}
	for _, o := range []remote.Options{
		{Timeout: -1}, {Timeout: 2 * time.Minute}, {TTL: -time.Second}, {LockTTL: time.Millisecond},
		{MaxValue: 2 << 20}, {QueueEntries: -1}, {MinBackoff: time.Second, MaxBackoff: time.Millisecond},
	} {
		o.URL = "redis://h"
		if _, err := remote.New(o); !errors.Is(err, remote.ErrOptions) {
			t.Errorf("New(%+v) = %v, want ErrOptions", o, err)
		}
	}
}

// Many goroutines use one client while the server dies and comes back: no
// deadlock, no race, no call past the deadline.
func TestConcurrentFlapping(t *testing.T) {
	srv := startRedis(t)
	const timeout = 100 * time.Millisecond
	r, warn := newRemote(t, srv.url(), func(o *remote.Options) { o.Timeout = timeout; o.QueueEntries = 64 })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var worst time.Duration
	var worstOp int
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				switch i % 4 {
				case 0:
					r.Put("s", key(g*1000+i%100), value(i))
				case 1:
					r.Get("s", key(g*1000+i%100))
				case 2:
					if u, ok := r.TryLock("s", key(i%7)); ok {
						u()
					}
				case 3:
					r.Flush()
				}
				d := time.Since(t0)
				mu.Lock()
				if d > worst {
					worst, worstOp = d, i%4
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	for i := 0; i < 3; i++ {
		time.Sleep(150 * time.Millisecond)
		srv.stop()
		time.Sleep(150 * time.Millisecond)
		srv.restart()
	}
	close(stop)
	wg.Wait()
	t.Logf("slowest call: %v (op %d)", worst, worstOp)
	if worst > timeout+slack {
		t.Fatalf("a call (op %d: put, get, lock, flush) took %v; deadline %v", worstOp, worst, timeout)
	}
	if warn.lines() != 1 {
		t.Fatalf("want one warning line, got %q", warn.String())
	}
	t0 := time.Now()
	r.Close()
	if d := time.Since(t0); d > timeout+slack {
		t.Fatalf("close took %v", d)
	}
}

// A lock holder's value reaches the server before its lock is released, so
// a node that takes the lock next finds the value rather than building it
// again. Keyspace notifications give the server's own order of events.
func TestUnlockAfterValue(t *testing.T) {
	srv := startRedis(t, "--notify-keyspace-events", "Eg$")
	direct := srv.client()
	ctx := context.Background()
	sub := direct.PSubscribe(ctx, "__keyevent@0__:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ := newRemote(t, srv.url(), nil)
	k := []byte("cold shape")
	for round := 0; round < 20; round++ {
		unlock, ok := r.TryLock("s", k)
		if !ok {
			t.Fatal("lock refused")
		}
		r.Put("s", k, value(round))
		unlock()
		r.Flush()
		var events []string
		for len(events) < 3 {
			m, err := sub.ReceiveTimeout(ctx, 5*time.Second)
			if err != nil {
				t.Fatalf("events so far %v: %v", events, err)
			}
			if msg, ok := m.(*redis.Message); ok && !strings.HasSuffix(msg.Channel, ":expire") {
				ev := strings.TrimPrefix(msg.Channel, "__keyevent@0__:") + " " + msg.Payload
				events = append(events, ev)
			}
		}
		lk, ek := remote.LockKey(remote.DefaultPrefix, "s", k), remote.EntryKey(remote.DefaultPrefix, "s", k)
		want := []string{"set " + lk, "set " + ek, "del " + lk}
		if strings.Join(events, ",") != strings.Join(want, ",") {
			t.Fatalf("round %d: server saw %v, want %v", round, events, want)
		}
	}
}
