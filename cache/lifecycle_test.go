package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests of the lifecycle guarantee (lifecycle.go): a call racing Close
// completes as before the close or returns ErrClosed, and nothing it does
// leaves a descriptor open or a pin held.

// openFiles counts this process's descriptors open on files in dir.
func openFiles(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil &&
			strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// lifecycleOps are the entry points, each as a call that misses in memory
// (so it goes on to the file) on a handle opened lazily.
var lifecycleOps = []struct {
	name string
	call func(c *Cache) error
}{
	{"find", func(c *Cache) error { _, _, err := c.Find(lkey(1_000_000), make([]byte, 64)); return err }},
	{"find-lazy-chunk", func(c *Cache) error { _, _, err := c.Find(lkey(7), make([]byte, 256)); return err }},
	{"load", func(c *Cache) error { return c.Load() }},
	{"insert", func(c *Cache) error { return c.Insert(lkey(3), lval(3, 9)) }},
	{"save", func(c *Cache) error { return c.Save() }},
	{"get_or_create", func(c *Cache) error {
		_, _, err := c.GetOrCreate(lkey(2_000_000), make([]byte, 64), func(dst []byte) (int, error) { return copy(dst, "built"), nil })
		return err
	}},
	{"stats", func(c *Cache) error { c.Stats(); return nil }},
}

// holdOnce makes the first call of c that reaches lockLive wait there, on
// its way to mu, until release is closed; held is closed when it does.
func holdOnce(t *testing.T, c *Cache) (held, release chan struct{}) {
	held, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func(h *Cache) {
		if h == c {
			once.Do(func() {
				close(held)
				<-release
			})
		}
	}
	testHookLockLive.Store(&hook)
	t.Cleanup(func() { testHookLockLive.Store(nil) })
	return held, release
}

// Each entry point, held between its check of closed and its lock while
// Close runs to the end, then let go: it must return ErrClosed (or what it
// would have before the close), reopen nothing and publish nothing. Before
// the fix, find, load, insert and get_or_create reopened the file (a
// descriptor nothing closes) and published an index (a pin nothing
// unpins: the process aborts when its Pinner is collected), and stats on a
// lazily opened handle dereferenced nil.
func TestCallRacingCloseLeavesNothing(t *testing.T) {
	for _, op := range lifecycleOps {
		t.Run(op.name, func(t *testing.T) {
			path := writeFile(t, lazyImage(3000))
			pinners, indexes := Pinned()
			c, err := Open(path, &Options{Scope: lazyScope, Warn: io.Discard, Publish: &testPublisher{}, LockTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if c.lazy == nil {
				t.Fatal("not opened lazily")
			}
			held, release := holdOnce(t, c)
			done := make(chan error, 1)
			go func() { done <- op.call(c) }()
			<-held
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			close(release)
			if err := <-done; err != nil && !errors.Is(err, ErrClosed) {
				t.Fatalf("%s racing close: %v, want ErrClosed or success", op.name, err)
			}
			if n := openFiles(t, filepath.Dir(path)); n != 0 {
				t.Errorf("%s racing close left %d descriptors open on the cache's files", op.name, n)
			}
			if p, x := Pinned(); p != pinners || x != indexes {
				t.Errorf("%s racing close left %d Pinners and %d published indexes (before: %d and %d)", op.name, p, x, pinners, indexes)
			}
		})
	}
}

// Every entry point called after Close, on a handle opened lazily and on
// one in each mode, returns ErrClosed (Stats: the counters), and never
// panics. Before the fix Stats on a lazily opened handle dereferenced nil.
func TestCallsAfterClose(t *testing.T) {
	for _, mode := range []Mode{ModeReadWrite, ModeReadOnly, ModeOff, ModeRecache, ModeStrict} {
		t.Run(fmt.Sprint("mode", mode), func(t *testing.T) {
			path := writeFile(t, lazyImage(3000))
			c, err := Open(path, &Options{Scope: lazyScope, Mode: mode, Warn: io.Discard, Publish: &testPublisher{}})
			if err != nil {
				t.Fatal(err)
			}
			if mode != ModeOff && mode != ModeRecache {
				mustValue(t, c, lkey(5), lval(5, 0)) // decodes a chunk
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			if mode != ModeOff && mode != ModeRecache && st.Entries == 0 {
				t.Errorf("stats after close: %+v", st)
			}
			for _, op := range lifecycleOps {
				if op.name == "stats" {
					continue
				}
				if err := op.call(c); !errors.Is(err, ErrClosed) {
					t.Errorf("%s after close: %v, want ErrClosed", op.name, err)
				}
			}
			if _, _, err := c.Find(lkey(5), make([]byte, 256)); !errors.Is(err, ErrClosed) {
				t.Errorf("find of a key in memory after close: %v, want ErrClosed", err)
			}
			if _, _, err := c.Get(lkey(5)); !errors.Is(err, ErrClosed) {
				t.Errorf("get after close: %v, want ErrClosed", err)
			}
			if err := c.Close(); err != nil {
				t.Errorf("second close: %v", err)
			}
			if n := openFiles(t, filepath.Dir(path)); n != 0 {
				t.Errorf("%d descriptors left open", n)
			}
		})
	}
}

// Many goroutines call every entry point on shared handles while others
// close them and open new ones, and a peer handle compacts the file (run
// with -race). Every value found is one inserted for its key; every error
// is ErrClosed; at the end no descriptor is open and nothing is pinned.
func TestLifecycleRandom(t *testing.T) {
	const keys, slots, workers, rounds = 200, 3, 8, 400
	path := writeFile(t, lazyImage(keys))
	pinners, indexes := Pinned()
	opts := &Options{Scope: lazyScope, Warn: io.Discard, Publish: &testPublisher{}, LockTimeout: time.Minute, CompactJournal: 4 << 10}
	open := func() *Cache {
		c, err := Open(path, opts)
		if err != nil {
			t.Error(err)
			return nil
		}
		return c
	}
	var mu sync.Mutex
	handles := make([]*Cache, slots)
	for i := range handles {
		handles[i] = open()
	}
	pick := func(r *rand.Rand) *Cache {
		mu.Lock()
		defer mu.Unlock()
		return handles[r.IntN(slots)]
	}
	// A value of key i is lval(i, v) for some v, or "built-i".
	legit := func(i int, v []byte) bool {
		return bytes.HasPrefix(v, lval(i, 0)[:13]) || bytes.Equal(v, []byte(fmt.Sprint("built-", i)))
	}
	fail := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			buf := make([]byte, 256)
			check := func(what string, i int, err error) bool {
				if err != nil && !errors.Is(err, ErrClosed) {
					fail <- fmt.Errorf("%s of key %d: %v", what, i, err)
					return false
				}
				return true
			}
			for n := 0; n < rounds; n++ {
				i := r.IntN(keys + keys/4) // some keys never inserted
				c := pick(r)
				var err error
				switch op := r.IntN(10); op {
				case 0: // close a handle and put a new one in its place
					s := r.IntN(slots)
					nc := open()
					mu.Lock()
					old := handles[s]
					handles[s] = nc
					mu.Unlock()
					err = old.Close()
				case 1:
					err = c.Insert(lkey(i), lval(i, 1+w))
				case 2:
					err = c.Load()
				case 3:
					err = c.Save()
				case 4:
					c.Stats()
				case 5:
					var got int
					got, _, err = c.GetOrCreate(lkey(i), buf, func(dst []byte) (int, error) { return copy(dst, fmt.Sprint("built-", i)), nil })
					if err == nil && !legit(i, buf[:got]) {
						fail <- fmt.Errorf("get_or_create of key %d: %q", i, buf[:got])
						return
					}
				default:
					var got int
					var found bool
					got, found, err = c.Find(lkey(i), buf)
					if err == nil && found && !legit(i, buf[:got]) {
						fail <- fmt.Errorf("find of key %d: %q", i, buf[:got])
						return
					}
				}
				if !check("call", i, err) {
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for _, c := range handles {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
	close(fail)
	for err := range fail {
		t.Error(err)
	}
	if n := openFiles(t, filepath.Dir(path)); n != 0 {
		t.Errorf("%d descriptors left open on the cache's files", n)
	}
	if p, x := Pinned(); p != pinners || x != indexes {
		t.Errorf("%d Pinners and %d published indexes left (before: %d and %d)", p, x, pinners, indexes)
	}
}
