package cache_test

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
	"github.com/convcache/convcache/lock"
)

// The verbose log: one line per event, in the documented format.
func TestVerboseLog(t *testing.T) {
	e := newEnv(t)
	var log bytes.Buffer
	c := e.open(cache.Options{Verbose: cache.LogAll, Log: &log})
	mustMiss(t, c, key(1))
	mustInsert(t, c, key(1), val(1, 0))
	mustGet(t, c, key(1), val(1, 0))
	if _, _, err := c.GetOrCreate(key(2), make([]byte, 64), func(dst []byte) (int, error) { return copy(dst, "built"), nil }); err != nil {
		t.Fatal(err)
	}
	other := e.open(cache.Options{})
	mustInsert(t, other, key(3), val(3, 0))
	mustGet(t, c, key(3), val(3, 0)) // read from the file: a persistent hit
	compactor := e.open(cache.Options{Verbose: cache.LogAll, Log: &log, CompactJournal: 1})
	if err := compactor.Save(); err != nil {
		t.Fatal(err)
	}
	// Any lock acquisition slower than 50 µs logs a lock_wait: whether one
	// does here depends on the machine's load, so the sequence leaves them
	// out. The lock wait below is arranged.
	want := "miss insert hit miss build insert persistent_hit compact"
	if got := strings.Join(logEvents(t, log.String(), "lock_wait"), " "); got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	// A lock held elsewhere: the insert waits its whole lock timeout (a
	// lock_wait of at least 20 ms), then keeps the entry in memory.
	log.Reset()
	held, err := lock.New(e.path + ".lock").Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waiter := e.open(cache.Options{Verbose: cache.LogAll, Log: &log, LockTimeout: 20 * time.Millisecond})
	if err := waiter.Insert(key(4), val(4, 0)); !errors.Is(err, cache.ErrPending) {
		t.Fatalf("insert under a held lock: %v, want ErrPending", err)
	}
	held.Unlock()
	if got := strings.Join(logEvents(t, log.String(), ""), " "); got != "lock_wait pending" {
		t.Fatalf("events %q, want \"lock_wait pending\"", got)
	}
	if us, _ := strconv.ParseFloat(strings.Split(strings.SplitN(log.String(), "\n", 2)[0], ",")[4], 64); us < 20000 {
		t.Fatalf("lock_wait of %.1f µs, want at least the 20 ms timeout: %q", us, log.String())
	}
	// Level 1 leaves out compactions; off writes nothing.
	log.Reset()
	quiet := e.open(cache.Options{Verbose: cache.LogEvents, Log: &log, CompactJournal: 1})
	mustInsert(t, quiet, key(9), val(9, 0))
	quiet.Save()
	if strings.Contains(log.String(), "compact") || !strings.Contains(log.String(), "insert") {
		t.Fatalf("level 1: %q", log.String())
	}
	log.Reset()
	silent := e.open(cache.Options{Log: &log})
	mustGet(t, silent, key(9), val(9, 0))
	if log.Len() != 0 {
		t.Fatal("log written while off")
	}
}

// logEvents checks that every line of a verbose log has the documented
// format and returns the lines' events, leaving out skip.
func logEvents(t *testing.T, log, skip string) []string {
	t.Helper()
	line := regexp.MustCompile(`^convcache,(hit|persistent_hit|system_hit|remote_hit|miss|insert|pending|build|error|lock_wait|compact|evict),[0-9a-f]{8},(-|[0-9]+:[0-9a-f]{16}),[0-9]+\.[0-9](,[^,]*)?$`)
	var events []string
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if !line.MatchString(l) {
			t.Fatalf("bad line %q", l)
		}
		if ev := strings.Split(l, ",")[1]; ev != skip {
			events = append(events, ev)
		}
	}
	return events
}

// The read-only system tier: asked after the user's file, its hits stay out
// of the user's file unless promoted.
func TestSystemTier(t *testing.T) {
	sys := newEnv(t)
	img := sys.open(cache.Options{Scope: "s"})
	for i := 0; i < 10; i++ {
		mustInsert(t, img, key(i), val(i, 100))
	}
	img.Close()

	user := newEnv(t)
	u := user.open(cache.Options{Scope: "s", SystemPath: sys.path})
	mustInsert(t, u, key(0), val(0, 1)) // the user's own value wins
	mustGet(t, u, key(0), val(0, 1))
	mustGet(t, u, key(5), val(5, 100)) // from the system tier
	mustGet(t, u, key(5), val(5, 100)) // again, from memory
	mustMiss(t, u, key(50))
	st := u.Stats()
	if st.HitsSystem != 2 || st.HitsMemory != 1 || st.Misses != 1 {
		t.Fatalf("stats %+v", st)
	}
	if err := u.Save(); err != nil {
		t.Fatal(err)
	}
	f, _ := cachefile.ReadFile(user.path)
	if len(f.Entries()) != 1 {
		t.Fatalf("system hits copied to the user file: %d entries", len(f.Entries()))
	}
	// Inserting a system value explicitly does write it.
	mustInsert(t, u, key(5), val(5, 100))
	f, _ = cachefile.ReadFile(user.path)
	if len(f.Entries()) != 2 {
		t.Fatal("explicit insert of a system-tier value was skipped")
	}
	// Another scope sees nothing of the system tier's.
	other := user.open(cache.Options{Scope: "t", SystemPath: sys.path})
	mustMiss(t, other, key(5))

	// With Promote, system hits are written to the user's file.
	p := newEnv(t)
	pc := p.open(cache.Options{Scope: "s", SystemPath: sys.path, Promote: true})
	mustGet(t, pc, key(7), val(7, 100))
	f, _ = cachefile.ReadFile(p.path)
	if len(f.Entries()) != 1 {
		t.Fatal("promote did not write the system hit")
	}
	// A missing system file is a warning, not an error.
	w := newEnv(t)
	w.open(cache.Options{SystemPath: "/nonexistent/system.ccdb"})
	if !strings.Contains(w.warnings(), "system tier") {
		t.Fatalf("no warning: %q", w.warnings())
	}
}
