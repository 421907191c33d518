package lock

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/convcache/convcache/internal/safefile"
)

// ErrTimeout is returned when a lock could not be acquired before the
// deadline.
var ErrTimeout = errors.New("lock: timed out waiting for lock")

// ErrRefused is wrapped by the error for a lock file that must not be used:
// a symbolic link, not a regular file, or owned by another user or writable
// by group or others (see NewShared). Such a lock is never waited for: its
// owner could hold it forever.
var ErrRefused = safefile.ErrRefused

// keySpace is the number of distinct key-lock offsets.
const keySpace = 1 << 40

// compactionOffset is the byte a compaction holds while it runs, beyond
// every key lock.
const compactionOffset = 1 << 41

// File is a sidecar lock file. The zero value is not usable; use New.
// A File is safe for concurrent use.
type File struct {
	path   string
	policy safefile.Policy
}

// New returns a File for path. The file is created (mode 0600) on first use.
// A link at path is never followed, and a lock file owned by another user
// or writable by group or others is refused (ErrRefused).
func New(path string) *File { return &File{path: path} }

// NewShared is New for a cache shared on purpose (CONVCACHE_TRUST_SHARED):
// a lock file of another user, or writable by group or others, is used, and
// a new one in a group-writable directory is made 0660 in that directory's
// group.
func NewShared(path string) *File {
	return &File{path: path, policy: safefile.Policy{TrustShared: true}}
}

// Path returns the sidecar's path.
func (f *File) Path() string { return f.path }

// Lock is a held lock. Release it with Unlock.
type Lock struct {
	fd int
}

// Unlock releases the lock. It is safe to call on a nil Lock and more than
// once.
func (l *Lock) Unlock() {
	if l == nil || l.fd < 0 {
		return
	}
	unix.Close(l.fd) // closing the only descriptor of the OFD drops its locks
	l.fd = -1
}

// Lock takes the exclusive file lock, waiting at most timeout. A timeout <= 0
// means a single non-blocking attempt.
func (f *File) Lock(timeout time.Duration) (*Lock, error) {
	return f.lockRange(0, timeout)
}

// TryLockKey makes one non-blocking attempt at the key lock for hash h. It
// returns (nil, nil) when another descriptor holds it.
func (f *File) TryLockKey(h uint64) (*Lock, error) {
	l, err := f.lockRange(1+int64(h%keySpace), 0)
	if errors.Is(err, ErrTimeout) {
		return nil, nil
	}
	return l, err
}

// TryLockCompaction makes one non-blocking attempt at the compaction lock,
// which a process holds while it compacts, so that processes that cross the
// compaction threshold together do not all do the same work. It returns
// (nil, nil) when another descriptor holds it.
func (f *File) TryLockCompaction() (*Lock, error) {
	l, err := f.lockRange(compactionOffset, 0)
	if errors.Is(err, ErrTimeout) {
		return nil, nil
	}
	return l, err
}

// open opens (creating if needed) and checks the lock file. The returned
// descriptor is the lock's own: closing it drops the lock.
func (f *File) open() (int, error) {
	fd, err := safefile.OpenFd(f.path, unix.O_RDWR, true, f.policy, false)
	if err != nil {
		if errors.Is(err, ErrRefused) {
			return -1, fmt.Errorf("lock file %w", err)
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return -1, &os.PathError{Op: "open lock file", Path: f.path, Err: err}
	}
	return fd, nil
}

// lockRange write-locks the single byte at off.
func (f *File) lockRange(off int64, timeout time.Duration) (*Lock, error) {
	fd, err := f.open()
	if err != nil {
		return nil, err
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	backoff := 20 * time.Microsecond
	for {
		ok, err := tryLock(fd, off)
		if err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "lock", Path: f.path, Err: err}
		}
		if ok {
			return &Lock{fd: fd}, nil
		}
		if timeout <= 0 || !time.Now().Before(deadline) {
			unix.Close(fd)
			return nil, fmt.Errorf("%w (%s)", ErrTimeout, f.path)
		}
		if rest := time.Until(deadline); backoff > rest {
			backoff = rest
		}
		time.Sleep(backoff)
		if backoff < 2*time.Millisecond {
			backoff *= 2
		}
	}
}

// tryLock makes one non-blocking attempt. It reports false when the range is
// held by another open file description.
func tryLock(fd int, off int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: off, Len: 1}
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
		switch err {
		case nil:
			return true, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN, unix.EACCES:
			return false, nil
		default:
			return false, err
		}
	}
}
