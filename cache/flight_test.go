package cache_test

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
)

// The tests of GetOrCreate's single flight. Each asserts what holds however
// the goroutines are scheduled: a caller that arrives after the builder
// finished finds the value, one that arrives meanwhile waits for it, and in
// neither case does it build.

// builder returns a BuildFunc that writes v, counting its calls in n, after
// started is closed (if not nil) and release is (if not nil).
func builder(v []byte, n *atomic.Int32, started chan<- struct{}, release <-chan struct{}) cache.BuildFunc {
	var once sync.Once
	return func(dst []byte) (int, error) {
		n.Add(1)
		if started != nil {
			once.Do(func() { close(started) })
		}
		if release != nil {
			<-release
		}
		if len(v) > len(dst) {
			return len(v), cache.ErrRange
		}
		return copy(dst, v), nil
	}
}

// Concurrent callers for one key run one build and all get its value.
func TestFlightOneBuild(t *testing.T) {
	e := newEnv(t)
	c := e.open(cache.Options{})
	var builds atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	build := builder(val(1, 0), &builds, started, release)
	const callers = 16
	var wg sync.WaitGroup
	results := make([]error, callers)
	built := make([]bool, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := make([]byte, 256)
			n, b, err := c.GetOrCreate(key(1), dst, build)
			if err == nil && !bytes.Equal(dst[:n], val(1, 0)) {
				err = errors.New("wrong value " + string(dst[:n]))
			}
			results[i], built[i] = err, b
		}()
	}
	<-started // the leader builds; the others join it, now or after
	close(release)
	wg.Wait()
	leaders := 0
	for i := range callers {
		if results[i] != nil {
			t.Errorf("caller %d: %v", i, results[i])
		}
		if built[i] {
			leaders++
		}
	}
	if builds.Load() != 1 || leaders != 1 {
		t.Fatalf("%d builds, %d callers report building; want 1 and 1", builds.Load(), leaders)
	}
	mustGet(t, c, key(1), val(1, 0)) // and it was stored
}

// A failed build stores nothing, its error goes to its own caller only,
// and the callers that waited build again with their own builders.
func TestFlightFailedBuild(t *testing.T) {
	e := newEnv(t)
	c := e.open(cache.Options{})
	boom := errors.New("benchmark failed")
	started, release := make(chan struct{}), make(chan struct{})
	var builds atomic.Int32
	failing := func(dst []byte) (int, error) {
		builds.Add(1)
		close(started)
		<-release
		return 0, boom
	}
	good := builder(val(2, 0), &builds, nil, nil)
	errc := make(chan error, 1)
	go func() {
		_, _, err := c.GetOrCreate(key(2), make([]byte, 256), failing)
		errc <- err
	}()
	<-started
	const waiters = 8
	var wg sync.WaitGroup
	var failed, ok atomic.Int32
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := make([]byte, 256)
			n, _, err := c.GetOrCreate(key(2), dst, good)
			switch {
			case err != nil:
				failed.Add(1)
				t.Errorf("waiter: %v", err)
			case !bytes.Equal(dst[:n], val(2, 0)):
				t.Errorf("waiter got %q", dst[:n])
			default:
				ok.Add(1)
			}
		}()
	}
	close(release)
	if err := <-errc; !errors.Is(err, boom) {
		t.Fatalf("the failed builder's caller got %v, want its error", err)
	}
	wg.Wait()
	if ok.Load() != waiters || builds.Load() != 2 {
		t.Fatalf("%d of %d waiters got the value, %d builds (want 2: the failure and one retry)", ok.Load(), waiters, builds.Load())
	}
}

// A waiter whose buffer is too short gets ErrRange and the length needed,
// as Find does; a builder that returns more than its buffer is refused.
func TestFlightShortBuffer(t *testing.T) {
	e := newEnv(t)
	c := e.open(cache.Options{})
	var builds atomic.Int32
	v := val(3, 0)
	if _, _, err := c.GetOrCreate(key(3), make([]byte, 256), builder(v, &builds, nil, nil)); err != nil {
		t.Fatal(err)
	}
	n, built, err := c.GetOrCreate(key(3), make([]byte, 4), builder(v, &builds, nil, nil))
	if !errors.Is(err, cache.ErrRange) || n != len(v) || built {
		t.Fatalf("short buffer: n=%d built=%v err=%v; want %d, ErrRange", n, built, err, len(v))
	}
	liar := func(dst []byte) (int, error) { return len(dst) + 1, nil }
	if _, _, err := c.GetOrCreate(key(4), make([]byte, 8), liar); !errors.Is(err, cache.ErrInvalid) {
		t.Fatalf("a builder claiming more than its buffer: %v, want ErrInvalid", err)
	}
	mustMiss(t, c, key(4))
	if _, _, err := c.GetOrCreate(key(5), make([]byte, 8), nil); !errors.Is(err, cache.ErrInvalid) {
		t.Fatalf("nil builder: %v", err)
	}
	if _, _, err := c.GetOrCreate(nil, make([]byte, 8), liar); !errors.Is(err, cache.ErrSize) {
		t.Fatalf("empty key: %v", err)
	}
}

// Across handles on one file (as across processes), the second caller
// waits for the first one's build, under the key's lock, and reads its
// value from the file instead of building.
func TestFlightAcrossHandles(t *testing.T) {
	e := newEnv(t)
	a, b := e.open(cache.Options{}), e.open(cache.Options{})
	var builds atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		_, _, err := a.GetOrCreate(key(6), make([]byte, 256), builder(val(6, 0), &builds, started, release))
		errc <- err
	}()
	<-started // a holds the key's lock while it builds
	done := make(chan struct{})
	var n int
	var built bool
	var err error
	dst := make([]byte, 256)
	go func() {
		defer close(done)
		n, built, err = b.GetOrCreate(key(6), dst, builder(val(6, 1), &builds, nil, nil))
	}()
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil || built || !bytes.Equal(dst[:n], val(6, 0)) || builds.Load() != 1 {
		t.Fatalf("second handle: %q built=%v err=%v, %d builds; want the first handle's value and 1 build", dst[:n], built, err, builds.Load())
	}
}

// A waiter does not wait for a stalled builder longer than the build
// timeout: it then builds the value itself.
func TestFlightStalledBuilder(t *testing.T) {
	e := newEnv(t)
	c := e.open(cache.Options{BuildTimeout: 20 * time.Millisecond})
	var builds atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		_, _, err := c.GetOrCreate(key(7), make([]byte, 256), builder(val(7, 0), &builds, started, release))
		errc <- err
	}()
	<-started
	dst := make([]byte, 256)
	n, built, err := c.GetOrCreate(key(7), dst, builder(val(7, 1), &builds, nil, nil))
	close(release) // only now does the stalled builder finish
	if err != nil || !built || !bytes.Equal(dst[:n], val(7, 1)) {
		t.Fatalf("waiter of a stalled builder: %q built=%v err=%v; want its own value", dst[:n], built, err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// In ModeStrict a miss is ErrMiss and nothing is built; in ModeOff every
// call builds and nothing is stored.
func TestFlightModes(t *testing.T) {
	var builds atomic.Int32
	e := newEnv(t)
	strict := e.open(cache.Options{Mode: cache.ModeStrict})
	if _, built, err := strict.GetOrCreate(key(8), make([]byte, 256), builder(val(8, 0), &builds, nil, nil)); !errors.Is(err, cache.ErrMiss) || built || builds.Load() != 0 {
		t.Fatalf("strict: built=%v err=%v builds=%d", built, err, builds.Load())
	}
	off := e.open(cache.Options{Mode: cache.ModeOff})
	for i := range 3 {
		dst := make([]byte, 256)
		n, built, err := off.GetOrCreate(key(8), dst, builder(val(8, 0), &builds, nil, nil))
		if err != nil || !built || !bytes.Equal(dst[:n], val(8, 0)) || builds.Load() != int32(i+1) {
			t.Fatalf("off, call %d: %q built=%v err=%v builds=%d", i, dst[:n], built, err, builds.Load())
		}
	}
	mustMiss(t, e.open(cache.Options{}), key(8))
}
