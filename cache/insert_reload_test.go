package cache_test

import (
	"testing"

	"github.com/convcache/convcache/cache"
)

// An insert whose append finds the file replaced by a peer's compaction
// (and so reloads the index from it first) still finds its own entry: the
// reload must not drop the entry the insert just put in the old index.
func TestOwnInsertSurvivesPeerCompaction(t *testing.T) {
	e := newEnv(t)
	a := e.open(cache.Options{})
	peer := e.open(cache.Options{CompactJournal: 1})
	mustInsert(t, a, key(0), val(0, 0))
	for i := 1; i < 50; i++ {
		mustInsert(t, peer, key(i), val(i, 0))
	}
	if err := peer.Save(); err != nil { // compacts: a new file replaces the one a has open
		t.Fatal(err)
	}
	if peer.Stats().Compactions == 0 {
		t.Fatal("the peer did not compact")
	}
	mustInsert(t, a, key(100), val(100, 0)) // a's append reloads first
	mustGet(t, a, key(100), val(100, 0))
	mustGet(t, a, key(0), val(0, 0))
}
