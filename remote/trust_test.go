package remote_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
	"github.com/convcache/convcache/remote"
)

// Records MAC'd under the cluster's key are hits for every node with the
// key, and are rejected by a node with another key. A node with a key
// rejects records without a MAC; a node without one reads both, neither
// authenticated.
func TestMACRecords(t *testing.T) {
	srv := startRedis(t)
	keyed, _ := newRemote(t, srv.url(), withKey)
	keyed2, _ := newRemote(t, srv.url(), withKey)
	stranger, _ := newRemote(t, srv.url(), func(o *remote.Options) { o.MACKey = []byte("a stranger's key, 32 bytes long!") })
	keyless, _ := newRemote(t, srv.url(), nil)
	if !keyed.Authenticated() || keyless.Authenticated() {
		t.Fatal("Authenticated")
	}
	const scope = "test-scope"
	keyed.Put(scope, key(1), value(1))
	keyed.Flush()
	keyless.Put(scope, key(2), value(2))
	keyless.Flush()
	for _, tc := range []struct {
		name     string
		r        *remote.Client
		k        []byte
		hit      bool
		rejected uint64
	}{
		{"same key", keyed2, key(1), true, 0},
		{"another key", stranger, key(1), false, 1},
		{"no key, MAC'd record", keyless, key(1), true, 0},
		{"a key, record without MAC", keyed2, key(2), false, 1},
		{"no key, record without MAC", keyless, key(2), true, 0},
	} {
		before := tc.r.Stats().Rejected
		v, ok := tc.r.Get(scope, tc.k)
		if ok != tc.hit || (ok && !bytes.Equal(v, value(int(tc.k[len(tc.k)-1]-'0')))) {
			t.Errorf("%s: %q %v, want hit %v", tc.name, v, ok, tc.hit)
		}
		if got := tc.r.Stats().Rejected - before; got != tc.rejected {
			t.Errorf("%s: rejected %d, want %d", tc.name, got, tc.rejected)
		}
	}
}

// fileEntries returns the entries of the cache file at path.
func fileEntries(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := cachefile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range f.Entries() {
		m[string(e.Key)] = string(e.Value)
	}
	return m
}

// A well-formed forged record (an attacker who can write to the database,
// without the key) is a hit for a node without a key, but only in that
// process's memory: it never reaches the node's file, so it is gone with
// the process. A node with a key rejects it. A node's own insert of a value
// is written as always.
func TestUnauthenticatedHitStaysInMemory(t *testing.T) {
	srv := startRedis(t)
	direct := srv.client()
	ctx := context.Background()
	const scope = "test-scope"
	forged := []byte("algo 7 ws 0 (forged)")
	if err := direct.Set(ctx, remote.EntryKey(remote.DefaultPrefix, scope, key(1)), remote.Record(scope, key(1), forged), 0).Err(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "b.ccdb")
	rb, _ := newRemote(t, srv.url(), nil)
	b := openCache(t, path, rb, cache.ModeReadWrite)
	if v, ok := find(t, b, key(1)); !ok || !bytes.Equal(v, forged) {
		t.Fatalf("keyless node: %q %v", v, ok)
	}
	// Later lookups are answered from memory, without the network. (The
	// writer loop's first PING may come later than the lookup: wait.)
	if !waitFor(10*time.Second, func() bool { return srv.calls(direct)["ping"] > 0 }) {
		t.Fatal("the writer loop never pinged")
	}
	before := srv.calls(direct)
	if v, ok := find(t, b, key(1)); !ok || !bytes.Equal(v, forged) {
		t.Fatalf("second lookup: %q %v", v, ok)
	}
	assertNoCalls(t, before, srv.calls(direct))
	if st := b.Stats(); st.Remote.Hits != 1 || st.HitsMemory != 1 {
		t.Fatalf("stats %+v", st)
	}
	// Another handle on the same file, and the file itself, know nothing
	// of it, after a Save too.
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	b2 := openCache(t, path, nil, cache.ModeReadWrite)
	if v, ok := find(t, b2, key(1)); ok {
		t.Fatalf("a second handle found the unauthenticated hit in the file: %q", v)
	}
	if m := fileEntries(t, path); len(m) != 0 {
		t.Fatalf("the file holds %v", m)
	}
	// A node with the key rejects the forgery and builds its own value.
	rk, _ := newRemote(t, srv.url(), withKey)
	k := openCache(t, filepath.Join(dir, "k.ccdb"), rk, cache.ModeReadWrite)
	if v, ok := find(t, k, key(1)); ok {
		t.Fatalf("keyed node returned the forgery %q", v)
	}
	if st := rk.Stats(); st.Rejected != 1 || st.Hits != 0 {
		t.Fatalf("keyed node's remote stats %+v", st)
	}
	// An insert of the value the keyless node holds in memory is written.
	if err := b.Insert(key(1), forged); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if m := fileEntries(t, path); m[string(key(1))] != string(forged) {
		t.Fatalf("an explicit insert was not written: %v", m)
	}
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
