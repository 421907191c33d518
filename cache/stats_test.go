package cache_test

import (
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
)

// LastCompaction is zero until the file is compacted, then the time of that
// compaction: a file created by a writer was never compacted.
func TestStatsLastCompaction(t *testing.T) {
	e := newEnv(t)
	c := e.open(cache.Options{})
	mustInsert(t, c, key(1), val(1, 0))
	if got := c.Stats().LastCompaction; !got.IsZero() {
		t.Fatalf("last compaction of a new file: %v, want zero", got)
	}
	compactor := e.open(cache.Options{CompactJournal: 1})
	mustInsert(t, compactor, key(2), val(2, 0))
	if err := compactor.Save(); err != nil {
		t.Fatal(err)
	}
	if got := compactor.Stats().LastCompaction; got.IsZero() || time.Since(got) > time.Minute {
		t.Fatalf("last compaction after Save compacted: %v, want now", got)
	}
	if st := compactor.Stats(); st.Compactions != 1 {
		t.Fatalf("compactions %d, want 1", st.Compactions)
	}
}
