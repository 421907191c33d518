package remote_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/convcache/convcache/remote"
)

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
