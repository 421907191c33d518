package remote_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/remote"
)

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
