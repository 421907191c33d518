package remote_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
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
	f, err := cache.ReadFile(path)
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
