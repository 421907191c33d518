package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
)

func main() {
	writer := flag.String("writer", "build/tests/torture_writer", "writer program")
	kills := flag.Int("kills", 100, "writer processes to kill")
	writers := flag.Int("writers", 4, "writers running at once")
	compact := flag.String("compact", "64K", "CONVCACHE_COMPACT_JOURNAL for the writers")
	dir := flag.String("dir", "", "directory for the cache file (default: a new temporary one)")
	compactor := flag.String("compactor", "", "internal: run as a compactor process on this cache file")
	flag.Parse()
	if *compactor != "" {
		runCompactor(*compactor)
		return
	}
	go onSignal()
	if *dir == "" {
		d, err := os.MkdirTemp("", "convcache-torture-")
		check(err)
		cleanup.dir = d
		*dir = d
	}
	path := filepath.Join(*dir, "torture.ccdb")
	t := &torture{writer: *writer, path: path, compact: *compact, acked: map[uint64]bool{}}
	start := time.Now()
	t.run(*writers, *kills)
	elapsed := time.Since(start)
	exit(t.verify(elapsed))
}

// cleanup is what exit undoes: the children still running and the
// temporary directory this run made.
var cleanup struct {
	sync.Mutex
	procs map[*exec.Cmd]bool
	dir   string
}

func reaped(cmd *exec.Cmd) {
	cleanup.Lock()
	defer cleanup.Unlock()
	delete(cleanup.procs, cmd)
}

// exit kills the children, removes the temporary directory and exits.
func exit(code int) {
	cleanup.Lock() // held to the end: no child starts after this
	for cmd := range cleanup.procs {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Process.Wait()
	}
	if cleanup.dir != "" {
		os.RemoveAll(cleanup.dir)
	}
	os.Exit(code)
}

func onSignal() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	s := <-c
	fmt.Fprintf(os.Stderr, "torture: %v: stopping\n", s)
	exit(128 + int(s.(syscall.Signal)))
}

// command is exec.Command for a child that dies with this process.
func command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	return cmd
}

// start starts cmd and returns its process, whose done receives Wait's
// result once it exits.
func start(cmd *exec.Cmd) *proc {
	cleanup.Lock()
	err := cmd.Start()
	if err == nil {
		if cleanup.procs == nil {
			cleanup.procs = map[*exec.Cmd]bool{}
		}
		cleanup.procs[cmd] = true
	}
	cleanup.Unlock()
	check(err)
	p := &proc{cmd: cmd, done: make(chan error, 1)}
	go func() {
		err := cmd.Wait()
		reaped(cmd)
		p.done <- err
	}()
	return p
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		exit(2)
	}
}

type torture struct {
	writer, path, compact string
	mu                    sync.Mutex
	acked                 map[uint64]bool
	spawned, killed       int
	compactorKills        int
	readers               sync.WaitGroup
}

// runCompactor rewrites the cache file again and again, as `convcache
// compact` does, until it is killed: kills then land in compactions too. It
// may start before any writer has created the file: that is nothing to do
// (cachefile.ErrNoFile), as a lock held too long by a writer is.
func runCompactor(path string) {
	for {
		err := cachefile.Rewrite(path, 10*time.Second, func(in []cachefile.Entry) ([]cachefile.Entry, error) { return in, nil })
		if err != nil && !errors.Is(err, cachefile.ErrNoFile) && !errors.Is(err, cache.ErrLock) {
			fmt.Fprintln(os.Stderr, "torture: compactor:", err)
			os.Exit(1)
		}
		time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
	}
}

type proc struct {
	cmd  *exec.Cmd
	done chan error
}

func (t *torture) spawn(id, instance int) *proc {
	r, w, err := os.Pipe()
	check(err)
	cmd := command(t.writer, t.path, fmt.Sprint(id), fmt.Sprint(instance<<20))
	cmd.ExtraFiles = []*os.File{w} // fd 3: acknowledgements
	cmd.Env = append(os.Environ(), "CONVCACHE_COMPACT_JOURNAL="+t.compact, "CONVCACHE_LOCK_TIMEOUT_MS=10000")
	p := start(cmd)
	w.Close()
	t.spawned++
	t.readers.Add(1)
	go func() {
		defer t.readers.Done()
		var buf [8]byte
		for {
			if _, err := io.ReadFull(r, buf[:]); err != nil {
				r.Close()
				return
			}
			t.mu.Lock()
			t.acked[binary.LittleEndian.Uint64(buf[:])] = true
			t.mu.Unlock()
		}
	}()
	return p
}

func (t *torture) spawnCompactor() *proc {
	return start(command(os.Args[0], "-compactor", t.path))
}

// killed reports whether a child's Wait result says SIGKILL ended it.
func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func (t *torture) run(writers, kills int) {
	procs := make([]*proc, writers+1)
	instance := 1
	for i := 0; i < writers; i++ {
		procs[i] = t.spawn(i+1, instance)
		instance++
	}
	procs[writers] = t.spawnCompactor()
	for t.killed < kills {
		time.Sleep(time.Duration(rand.IntN(20000)) * time.Microsecond)
		i := rand.IntN(writers + 1)
		p := procs[i]
		p.cmd.Process.Signal(syscall.SIGKILL)
		if err := <-p.done; !killed(err) { // it exited on its own: that is a failure
			fmt.Fprintf(os.Stderr, "torture: %s exited by itself: %v\n", t.name(i, writers), err)
			exit(1)
		}
		t.killed++
		if i == writers {
			t.compactorKills++
			procs[i] = t.spawnCompactor()
			continue
		}
		procs[i] = t.spawn(i+1, instance)
		instance++
	}
	for i, p := range procs {
		p.cmd.Process.Signal(syscall.SIGKILL)
		if err := <-p.done; !killed(err) {
			fmt.Fprintf(os.Stderr, "torture: %s exited by itself: %v\n", t.name(i, writers), err)
			exit(1)
		}
	}
	t.readers.Wait()
}

// name names procs[i] in messages.
func (t *torture) name(i, writers int) string {
	if i == writers {
		return "the compactor"
	}
	return fmt.Sprintf("writer %d", i+1)
}

// Keys and values as writer.c makes them.
func keyID(k []byte) (uint64, bool) {
	if len(k) != 104 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(k[8:]), true
}

func makeVal(id uint64) []byte {
	v := make([]byte, 48)
	x := id * 0x9E3779B97F4A7C15
	for i := 0; i < 6; i++ {
		x ^= x >> 29
		x *= 0xBF58476D1CE4E5B9
		binary.LittleEndian.PutUint64(v[8*i:], x)
	}
	return v
}

func (t *torture) verify(elapsed time.Duration) int {
	bad := 0
	fail := func(format string, args ...any) {
		bad++
		if bad <= 20 {
			fmt.Fprintf(os.Stderr, "torture: "+format+"\n", args...)
		}
	}
	f, err := cachefile.ReadFile(t.path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture: the file does not load:", err)
		return 1
	}
	for _, d := range f.Corrupt() {
		fail("corrupt record at offset %d (%d bytes)", d.Offset, d.Length)
	}
	torn := len(f.Damage) - len(f.Corrupt())
	entries := map[uint64][]byte{}
	for _, e := range f.Entries() {
		id, ok := keyID(e.Key)
		if !ok || e.Scope != "torture" {
			fail("unexpected entry: scope %q key %x", e.Scope, e.Key)
			continue
		}
		if !bytes.Equal(e.Value, makeVal(id)) {
			fail("key %#x holds a value never inserted for it", id)
		}
		entries[id] = e.Value
	}
	for id := range t.acked {
		if _, ok := entries[id]; !ok {
			fail("acknowledged insert %#x is missing", id)
		}
	}
	// The library itself loads it too.
	c, err := cache.Open(t.path, &cache.Options{Scope: "torture", Mode: cache.ModeReadOnly})
	if err != nil {
		fail("open: %v", err)
	} else {
		n := 0
		for id := range t.acked {
			k := make([]byte, 104)
			binary.LittleEndian.PutUint64(k[8:], id)
			k[28] = 4
			for i := 0; i < 4; i++ {
				k[32+4*i] = byte(id>>(8*i)) | 1
			}
			if v, ok, _ := c.Get(k); !ok || !bytes.Equal(v, makeVal(id)) {
				fail("library lookup of acknowledged %#x failed", id)
			}
			if n++; n == 2000 {
				break
			}
		}
		c.Close()
	}
	fmt.Printf("torture: %d processes killed (%d of them compactors; %d writers started) in %.1fs; %d acknowledged inserts checked, %d entries in the file, %d bytes, %d torn tail(s), %d corrupt records, %d bad\n",
		t.killed, t.compactorKills, t.spawned, elapsed.Seconds(), len(t.acked), len(entries), f.Size, torn, len(f.Corrupt()), bad)
	if bad > 0 {
		return 1
	}
	return 0
}
