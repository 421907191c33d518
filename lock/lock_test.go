package lock_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/convcache/convcache/lock"
)

// Two goroutines of one process exclude each other: each acquisition has
// its own open file description.
func TestExcludesThreads(t *testing.T) {
	f := lock.New(filepath.Join(t.TempDir(), "x.lock"))
	var inside, max atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				l, err := f.Lock(10 * time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				if n > max.Load() {
					max.Store(n)
				}
				time.Sleep(10 * time.Microsecond)
				inside.Add(-1)
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if max.Load() != 1 {
		t.Fatalf("%d holders at once", max.Load())
	}
}

func TestTimeout(t *testing.T) {
	f := lock.New(filepath.Join(t.TempDir(), "x.lock"))
	held, err := f.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = f.Lock(100 * time.Millisecond)
	d := time.Since(start)
	if !errors.Is(err, lock.ErrTimeout) || d < 100*time.Millisecond {
		t.Fatalf("%v after %v", err, d)
	}
	// A single try does not wait.
	if _, err := f.Lock(0); !errors.Is(err, lock.ErrTimeout) {
		t.Fatal(err)
	}
	held.Unlock()
	held.Unlock() // idempotent
	l, err := f.Lock(0)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	var nilLock *lock.Lock
	nilLock.Unlock()
}

// Key locks are independent of each other and of the file lock.
func TestKeyLocks(t *testing.T) {
	f := lock.New(filepath.Join(t.TempDir(), "x.lock"))
	file, _ := f.Lock(0)
	a, err := f.TryLockKey(1)
	if err != nil || a == nil {
		t.Fatal("key 1 blocked by the file lock", err)
	}
	b, _ := f.TryLockKey(2)
	if b == nil {
		t.Fatal("key 2 blocked by key 1")
	}
	if again, _ := f.TryLockKey(1); again != nil {
		t.Fatal("key 1 taken twice")
	}
	a.Unlock()
	if again, _ := f.TryLockKey(1); again == nil {
		t.Fatal("key 1 not released")
	} else {
		again.Unlock()
	}
	b.Unlock()
	file.Unlock()
}

func TestMissingDirectory(t *testing.T) {
	f := lock.New(filepath.Join(t.TempDir(), "no", "such", "dir", "x.lock"))
	if _, err := f.Lock(0); err == nil || errors.Is(err, lock.ErrTimeout) {
		t.Fatalf("got %v", err)
	}
}

// A process killed while holding the lock releases it at once.
func TestHolderKilled(t *testing.T) {
	if os.Getenv("LOCK_TEST_HOLD") != "" {
		if _, err := lock.New(os.Getenv("LOCK_TEST_HOLD")).Lock(time.Second); err != nil {
			os.Exit(2)
		}
		os.Stdout.Write([]byte("held\n"))
		time.Sleep(time.Hour)
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=TestHolderKilled$")
	cmd.Env = append(os.Environ(), "LOCK_TEST_HOLD="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives the test
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("child: %q %v", buf, err)
	}
	f := lock.New(path)
	if _, err := f.Lock(0); !errors.Is(err, lock.ErrTimeout) {
		t.Fatal("lock not held by the child", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := f.Lock(time.Second)
	if err != nil {
		t.Fatal("not released after SIGKILL:", err)
	}
	l.Unlock()
}

// The compaction lock excludes other compactions only.
func TestCompactionLock(t *testing.T) {
	f := lock.New(filepath.Join(t.TempDir(), "x.lock"))
	c, err := f.TryLockCompaction()
	if err != nil || c == nil {
		t.Fatal("compaction lock not taken", err)
	}
	if again, _ := f.TryLockCompaction(); again != nil {
		t.Fatal("two compactions at once")
	}
	file, err := f.Lock(0)
	if err != nil {
		t.Fatal("the file lock is blocked by a compaction:", err)
	}
	key, _ := f.TryLockKey(1 << 40) // the last key offset wraps below the compaction byte
	if key == nil {
		t.Fatal("a key lock is blocked by a compaction")
	}
	key.Unlock()
	file.Unlock()
	c.Unlock()
	if again, _ := f.TryLockCompaction(); again == nil {
		t.Fatal("compaction lock not released")
	} else {
		again.Unlock()
	}
}
