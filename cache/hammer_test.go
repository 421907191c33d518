package cache_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
)

// TestHammer is tests/test_hammer.c through the Go API, for the race
// detector: 8 goroutines find every key, in random order, while 4 writer
// processes (this test binary again, with HAMMER_WRITER set) insert,
// re-insert with new values, save, load and compact the same file
// (CompactJournal 1: whenever the journal outgrows the snapshot). Every value
// found must be one a process inserted for that key, byte for byte; a miss is
// allowed only where one can be right (see hammerReader.pass). Readers 0-3
// share handle A, which inserted the even keys first; 4-6 share B; 7 opens a
// handle for each pass and closes it; another goroutine loads A and B and
// saves A. At the end a fresh handle, A and B hold each key's last version.
func TestHammer(t *testing.T) {
	if os.Getenv("HAMMER_WRITER") != "" {
		hammerWriter(t)
		return
	}
	path := filepath.Join(t.TempDir(), "hammer.ccdb")
	open := func() *cache.Cache {
		c, err := cache.Open(path, &cache.Options{Scope: hammerScope, LockTimeout: time.Minute, CompactJournal: 1})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := open()
	defer a.Close()
	for k := 0; k < hammerKeys; k += 2 { // the even keys: preinserted
		if err := a.Insert(hammerKey(k), hammerVal(k, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	b := open()
	defer b.Close()

	// The writers wait for their stdin to close, so that all start together.
	type writer struct {
		cmd  *exec.Cmd
		gate io.WriteCloser
		out  bytes.Buffer
	}
	writers := make([]*writer, hammerWriters)
	for id := range writers {
		w := &writer{cmd: exec.Command(os.Args[0], "-test.run=^TestHammer$", "-test.count=1")}
		w.cmd.Env = append(os.Environ(), "HAMMER_WRITER="+strconv.Itoa(id), "HAMMER_PATH="+path)
		w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives the test
		w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.out
		var err error
		if w.gate, err = w.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.cmd.Process.Kill() }) // before TempDir's removal: cleanups run last first
		writers[id] = w
	}

	var (
		wg          sync.WaitGroup
		writersDone atomic.Bool
		failed      atomic.Bool // a reader failed: the others stop
		seen        [hammerKeys]atomic.Bool
		loads       int
	)
	readers := make([]*hammerReader, hammerReaders)
	for id := range readers {
		r := &hammerReader{t: t, id: id, seen: seen[:], failed: &failed, rng: uint32(id)*2654435761 + 1}
		readers[id] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Until a pass that began after the writers were done, and two at least.
			for done := false; (!done || r.passes < 2) && !failed.Load(); {
				done = writersDone.Load()
				switch {
				case id == hammerReaders-1:
					h := open()
					r.pass(h, done)
					h.Close()
				case id < 4:
					r.pass(a, done)
				default:
					r.pass(b, done)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ; !writersDone.Load() && !failed.Load(); loads++ {
			for _, c := range []*cache.Cache{a, b} {
				if err := c.Load(); err != nil {
					t.Error("load:", err)
				}
			}
			if loads%8 == 0 {
				if err := a.Save(); err != nil {
					t.Error("save:", err)
				}
			}
			time.Sleep(2 * time.Millisecond) // pacing only: nothing waits for this
		}
	}()
	for _, w := range writers {
		w.gate.Close()
	}
	var inserts, compactions uint64
	for id, w := range writers {
		if err := w.cmd.Wait(); err != nil {
			t.Errorf("writer %d: %v\n%s", id, err, w.out.String())
			continue
		}
		sc := bufio.NewScanner(&w.out)
		for sc.Scan() {
			var i, c uint64
			if n, _ := fmt.Sscanf(sc.Text(), "hammer-writer inserts=%d compactions=%d", &i, &c); n == 2 {
				inserts, compactions = inserts+i, compactions+c
			}
		}
	}
	writersDone.Store(true)
	wg.Wait()
	if t.Failed() {
		return
	}
	var hits, short, misses, passes uint64
	for _, r := range readers {
		hits, short, misses, passes = hits+r.hits, short+r.short, misses+r.misses, passes+r.passes
	}
	t.Logf("%d writers: %d inserts, %d compactions (and %d by A); %d readers: %d passes, %d hits checked, "+
		"%d lengths checked (ErrRange), %d misses; %d loads", hammerWriters, inserts, compactions,
		a.Stats().Compactions, hammerReaders, passes, hits, short, misses, loads)
	if compactions == 0 {
		t.Error("no writer compacted: the file was never replaced under the readers")
	}
	if a.Stats().Hits == 0 {
		t.Error("handle A counted no hits")
	}
	fresh := open()
	defer fresh.Close()
	for _, h := range []struct {
		name string
		c    *cache.Cache
	}{{"fresh handle", fresh}, {"A", a}, {"B", b}} {
		if err := h.c.Load(); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < hammerKeys+hammerGhosts; k++ {
			v, ok, err := h.c.Get(hammerKey(k))
			switch {
			case err != nil:
				t.Fatalf("%s: key %d: %v", h.name, k, err)
			case k >= hammerKeys && ok:
				t.Fatalf("%s: ghost key %d found: %q", h.name, k, v)
			case k < hammerKeys && !bytes.Equal(v, hammerVal(k, hammerFinal(k))):
				t.Fatalf("%s: key %d holds %x (%s), want its last version %d", h.name, k, v,
					hammerCheck(k, v), hammerFinal(k))
			}
		}
	}
}

const (
	hammerReaders = 8
	hammerWriters = 4
	hammerKeys    = 1000
	hammerGhosts  = 32 // keys nobody inserts: their finds miss, and read the file's new tail
	hammerRounds  = 16
	hammerScope   = "hammer"
)

// hammerMix is splitmix64's finaliser: every key, value and choice of the
// test is a function of it.
func hammerMix(a, b uint32) uint32 {
	x := uint64(a)<<32 | uint64(b)
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return uint32(x ^ x>>31)
}

// hammerKey is 1 to 300 bytes, distinct by construction: keys of 1 to 3
// bytes start with their id (below 48), the others with 4 bytes of it.
func hammerKey(k int) []byte { return hammerKeyTable[k] }

var hammerKeyTable = func() [][]byte {
	keys := make([][]byte, hammerKeys+hammerGhosts)
	for k := range keys {
		keys[k] = makeHammerKey(k)
	}
	return keys
}()

func makeHammerKey(k int) []byte {
	if k < 48 {
		b := bytes.Repeat([]byte{0xA5}, 1+k%3)
		b[0] = byte(k)
		return b
	}
	b := make([]byte, 4+hammerMix(uint32(k), 0xC0FFEE)%297)
	binary.LittleEndian.PutUint32(b, uint32(k))
	for j := 4; j < len(b); j++ {
		b[j] = byte(hammerMix(uint32(k), uint32(j)))
	}
	return b
}

// hammerVal is version ver of key k's value: 8 to 200 bytes, the ids first.
func hammerVal(k int, ver uint32) []byte {
	b := make([]byte, 8+hammerMix(uint32(k)^0x5EED0000, ver)%193)
	binary.LittleEndian.PutUint32(b, uint32(k))
	binary.LittleEndian.PutUint32(b[4:], ver)
	s := hammerMix(uint32(k), ver) | 1
	for j := 8; j < len(b); j++ {
		s ^= s << 13
		s ^= s >> 17
		s ^= s << 5
		b[j] = byte(s)
	}
	return b
}

// Who writes what: the parent the even keys at version 0; each key's one
// owner the odd keys in round 0 and about half the keys in each later round
// r, all at version r+1. One writer per key makes its last version known.
func hammerOwner(k int) int { return int(hammerMix(uint32(k), 7) % hammerWriters) }
func hammerWrites(k int, round uint32) bool {
	if round == 0 {
		return k%2 == 1
	}
	return hammerMix(uint32(k), 100+round)%2 == 0
}

func hammerLegit(k int, ver uint32) bool {
	if ver == 0 {
		return k%2 == 0
	}
	return ver <= hammerRounds && hammerWrites(k, ver-1)
}

func hammerFinal(k int) uint32 {
	for r := uint32(hammerRounds - 1); r >= 1; r-- {
		if hammerWrites(k, r) {
			return r + 1
		}
	}
	if k%2 == 0 {
		return 0
	}
	return 1
}

// hammerCheck returns "" if v is a value some process inserted for key k,
// else what is wrong with it.
func hammerCheck(k int, v []byte) string {
	if len(v) < 8 {
		return fmt.Sprintf("%d bytes, shorter than any value inserted", len(v))
	}
	id, ver := binary.LittleEndian.Uint32(v), binary.LittleEndian.Uint32(v[4:])
	switch {
	case id != uint32(k):
		return fmt.Sprintf("the value of key %d (version %d)", id, ver)
	case !hammerLegit(k, ver):
		return fmt.Sprintf("version %d, never inserted for this key", ver)
	case !bytes.Equal(v, hammerVal(k, ver)):
		return fmt.Sprintf("version %d with other bytes (%d long, inserted %d long)", ver, len(v), len(hammerVal(k, ver)))
	}
	return ""
}

type hammerReader struct {
	t                           *testing.T
	id                          int
	seen                        []atomic.Bool // a reader has found the key
	failed                      *atomic.Bool
	rng                         uint32
	hits, short, misses, passes uint64
}

func (r *hammerReader) fail(format string, args ...any) {
	r.t.Errorf("reader %d: "+format, append([]any{r.id}, args...)...)
	r.failed.Store(true)
}

// pass finds every key once, in a new random order. A miss is a failure for
// a key inserted before the readers started, for a key some reader had
// found before the find began (it is in the file, and a miss reads the
// file), and for any key once every writer has exited (allWritten: before
// the pass began). One
// find in 16 gets a buffer too small for most values: ErrRange must then
// give the length of a version inserted for the key and copy nothing.
func (r *hammerReader) pass(c *cache.Cache, allWritten bool) {
	order := make([]int, hammerKeys+hammerGhosts)
	for i := range order {
		order[i] = i
	}
	for i := len(order) - 1; i > 0; i-- {
		r.rng ^= r.rng << 13
		r.rng ^= r.rng >> 17
		r.rng ^= r.rng << 5
		j := int(r.rng % uint32(i+1))
		order[i], order[j] = order[j], order[i]
	}
	buf := make([]byte, 256)
	for i, k := range order {
		if r.failed.Load() {
			return
		}
		dst := buf
		if i%16 == 15 {
			dst = buf[:24]
		}
		for j := range dst {
			dst[j] = 0xEE
		}
		seen := k < hammerKeys && r.seen[k].Load() // before the find: a later hit elsewhere proves nothing
		n, found, err := c.Find(hammerKey(k), dst)
		ghost := k >= hammerKeys
		switch {
		case errors.Is(err, cache.ErrRange):
			if ghost || n <= len(dst) || !hammerLegitLen(k, n) || bytes.Count(dst, []byte{0xEE}) != len(dst) {
				r.fail("key %d: ErrRange with length %d for a %d-byte buffer (wrote to it: %v)", k, n, len(dst),
					bytes.Count(dst, []byte{0xEE}) != len(dst))
				return
			}
			r.short++
		case err != nil:
			r.fail("key %d: %v", k, err)
			return
		case found:
			if ghost {
				r.fail("ghost key %d found: %x", k, dst[:n])
				return
			}
			if bad := hammerCheck(k, dst[:n]); bad != "" {
				r.fail("key %d holds %s", k, bad)
				return
			}
			r.hits++
		case ghost:
			r.misses++
			continue
		case k%2 == 0:
			r.fail("key %d missed, though it was inserted before the readers started", k)
			return
		case allWritten:
			r.fail("key %d missed, though every writer had exited", k)
			return
		case seen:
			r.fail("key %d missed, though a reader had found it", k)
			return
		default:
			r.misses++
			continue
		}
		r.seen[k].Store(true)
	}
	r.passes++
}

func hammerLegitLen(k, n int) bool {
	for ver := uint32(0); ver <= hammerRounds; ver++ {
		if hammerLegit(k, ver) && len(hammerVal(k, ver)) == n {
			return true
		}
	}
	return false
}

// hammerWriter is a writer process: it inserts its keys round after round,
// reading back each insert exactly (nobody else writes the key) and one
// other key, saves each round and loads every third, and prints its counts.
func hammerWriter(t *testing.T) {
	id, _ := strconv.Atoi(os.Getenv("HAMMER_WRITER"))
	io.Copy(io.Discard, os.Stdin) // the gate: EOF when all may start
	c, err := cache.Open(os.Getenv("HAMMER_PATH"), &cache.Options{Scope: hammerScope, LockTimeout: time.Minute, CompactJournal: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rng := hammerMix(uint32(id), 42) | 1
	buf := make([]byte, 256)
	inserts := 0
	for r := uint32(0); r < hammerRounds; r++ {
		for k := 0; k < hammerKeys; k++ {
			if hammerOwner(k) != id || !hammerWrites(k, r) {
				continue
			}
			v := hammerVal(k, r+1)
			if err := c.Insert(hammerKey(k), v); err != nil {
				t.Fatalf("insert key %d: %v", k, err)
			}
			inserts++
			if n, ok, err := c.Find(hammerKey(k), buf); err != nil || !ok || !bytes.Equal(buf[:n], v) {
				t.Fatalf("key %d read back as %x %v %v, want %x", k, buf[:n], ok, err, v)
			}
			rng ^= rng << 13
			rng ^= rng >> 17
			rng ^= rng << 5
			other := int(rng % (hammerKeys + hammerGhosts))
			n, ok, err := c.Find(hammerKey(other), buf)
			switch {
			case err != nil:
				t.Fatalf("key %d: %v", other, err)
			case ok && (other >= hammerKeys || hammerCheck(other, buf[:n]) != ""):
				t.Fatalf("key %d holds %x: %s", other, buf[:n], hammerCheck(other, buf[:n]))
			case !ok && other < hammerKeys && other%2 == 0:
				t.Fatalf("key %d, inserted before the writers started, missed", other)
			}
		}
		if err := c.Save(); err != nil {
			t.Fatal(err)
		}
		if r%3 == 1 {
			if err := c.Load(); err != nil {
				t.Fatal(err)
			}
		}
	}
	fmt.Printf("hammer-writer inserts=%d compactions=%d\n", inserts, c.Stats().Compactions)
}
