package safefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Policy is what the user trusts.
type Policy struct {
	// TrustShared accepts files owned by another user or writable by group
	// or others, and makes new files group-shared in a group-writable
	// directory (CONVCACHE_TRUST_SHARED=1).
	TrustShared bool
}

// MaxLinks bounds the links Resolve follows, as the kernel bounds its own.
const MaxLinks = 8

// OpenFlags are added to every open: the final component must not be a
// link, a FIFO must not block the open, and the descriptor must not leak
// into programs the host executes.
const OpenFlags = unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// ErrRefused is wrapped by every refusal: a path or file the rules above
// forbid using.
var ErrRefused = errors.New("not trusted")

// RefusedError says which path was refused and why.
type RefusedError struct {
	Path   string
	Reason string // "is owned by uid 1001, not by this user (uid 1000) or root"
	// Trustable is true when CONVCACHE_TRUST_SHARED=1 would have accepted
	// the file (its owner or mode, not its type or a link).
	Trustable bool
}

func (e *RefusedError) Error() string        { return e.Path + " " + e.Reason }
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Hint is advice to append to a message about e.
func (e *RefusedError) Hint() string {
	if e.Trustable {
		return "set CONVCACHE_TRUST_SHARED=1 if it is shared on purpose"
	}
	if strings.Contains(e.Reason, "symbolic link") {
		return "name the file itself if you trust the link"
	}
	return "use another path"
}

func euid() int { return os.Geteuid() }

// trustedOwner reports whether uid may own what we use.
func trustedOwner(uid uint32) bool { return int(uid) == euid() || uid == 0 }

// Check returns why the opened file fi must not be used, or nil. It takes
// the result of fstat on the open descriptor, never of a second lookup of
// the path. devices also admits character devices (for a log).
func Check(path string, fi os.FileInfo, p Policy, devices bool) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &RefusedError{Path: path, Reason: "has no owner to check"}
	}
	return checkStat(path, st, p, devices)
}

func checkStat(path string, st *syscall.Stat_t, p Policy, devices bool) error {
	typ := st.Mode & syscall.S_IFMT
	if typ != syscall.S_IFREG && !(devices && typ == syscall.S_IFCHR) {
		return &RefusedError{Path: path, Reason: fmt.Sprintf("is not a regular file (%s)", kind(typ))}
	}
	if p.TrustShared || typ != syscall.S_IFREG {
		return nil // a terminal or /dev/null: written to only, its mode is the system's
	}
	if !trustedOwner(st.Uid) {
		return &RefusedError{Path: path, Trustable: true,
			Reason: fmt.Sprintf("is owned by uid %d, not by this user (uid %d) or root", st.Uid, euid())}
	}
	if perm := st.Mode & 0o777; perm&0o022 != 0 {
		return &RefusedError{Path: path, Trustable: true,
			Reason: fmt.Sprintf("is writable by group or others (mode %04o)", perm)}
	}
	return nil
}

func kind(typ uint32) string {
	switch typ {
	case syscall.S_IFIFO:
		return "a FIFO"
	case syscall.S_IFSOCK:
		return "a socket"
	case syscall.S_IFCHR, syscall.S_IFBLK:
		return "a device"
	case syscall.S_IFDIR:
		return "a directory"
	case syscall.S_IFLNK:
		return "a symbolic link"
	}
	return "not a file"
}

// OpenError turns an open error into a refusal where the path was a link
// (O_NOFOLLOW reports ELOOP), and returns other errors unchanged.
func OpenError(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return &RefusedError{Path: path, Reason: "is a symbolic link: not followed here"}
	}
	return err
}

// Resolve follows the symbolic links at the final component of path that
// this user or root owns. A link owned by anyone else is refused: it may
// have been planted in a shared directory to redirect us to a file of the
// attacker's, or to one of ours. A missing path is returned as it is.
//
// Each link is opened without following it (O_PATH|O_NOFOLLOW), and its
// owner and target are read from that descriptor, so the link checked is
// the link followed.
func Resolve(path string) (string, error) {
	for hops := 0; ; hops++ {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return path, nil // missing or unreachable: the open that follows reports it
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			unix.Close(fd)
			return path, nil
		}
		if !trustedOwner(st.Uid) {
			unix.Close(fd)
			return path, &RefusedError{Path: path,
				Reason: fmt.Sprintf("is a symbolic link owned by uid %d, not by this user (uid %d) or root: not followed", st.Uid, euid())}
		}
		if hops == MaxLinks {
			unix.Close(fd)
			return path, &RefusedError{Path: path, Reason: fmt.Sprintf("is a chain of more than %d symbolic links: not followed", MaxLinks)}
		}
		target, err := readlinkFd(fd)
		unix.Close(fd)
		if err != nil {
			return path, fmt.Errorf("read the link %s: %w", path, err)
		}
		if !filepath.IsAbs(target) {
			dir := filepath.Dir(path)
			if strings.Contains(target, "..") {
				// ".." is taken in the directory the kernel finds, which
				// differs from the lexical one below a linked directory.
				if real, err := filepath.EvalSymlinks(dir); err == nil {
					dir = real
				}
			}
			target = filepath.Join(dir, target)
		}
		path = filepath.Clean(target)
	}
}

// readlinkFd reads the target of the link open as fd (O_PATH): readlinkat
// with an empty path reads the link the descriptor refers to.
func readlinkFd(fd int) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// Attrs are the permission bits and group a file is given.
type Attrs struct {
	Perm os.FileMode
	GID  int // -1: the creator's, or what a set-group-ID directory gives
}

// Private is the default for new files: this user only.
var Private = Attrs{Perm: 0o600, GID: -1}

// NewFileAttrs returns what a new file in dir gets: Private, or with
// TrustShared in a directory its group may write, mode 0660 and the
// directory's group.
func NewFileAttrs(dir string, p Policy) Attrs {
	if !p.TrustShared {
		return Private
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm()&0o020 == 0 {
		return Private
	}
	gid := -1
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		gid = int(st.Gid)
	}
	return Attrs{Perm: 0o660, GID: gid}
}

// AttrsOf returns the attributes of an existing file, to give them to the
// file that replaces it.
func AttrsOf(fi os.FileInfo) Attrs {
	a := Attrs{Perm: fi.Mode().Perm(), GID: -1}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		a.GID = int(st.Gid)
	}
	return a
}

// Settable is what Apply needs of a file: *os.File has it.
type Settable interface {
	Stat() (os.FileInfo, error)
	Chmod(os.FileMode) error
	Chown(uid, gid int) error
}

// Apply gives f the attributes a: the mode exactly (the umask does not
// narrow it: a group-shared file must stay group-writable whoever
// compacts it), then the group, which fails when this user is not in it.
func (a Attrs) Apply(f Settable) error {
	if err := f.Chmod(a.Perm); err != nil {
		return err
	}
	if a.GID < 0 {
		return nil
	}
	if fi, err := f.Stat(); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Gid) == a.GID {
			return nil
		}
	}
	if err := f.Chown(-1, a.GID); err != nil {
		return fmt.Errorf("keep the file's group %d: %w", a.GID, err)
	}
	return nil
}

// OpenFile opens path (flag without O_CREAT; OpenFlags are added) and
// checks the opened file. With create, a missing file is created with
// O_EXCL and given NewFileAttrs of its directory; if one appears in the
// meantime, that one is opened and checked. Refusals wrap ErrRefused.
func OpenFile(path string, flag int, create bool, p Policy, devices bool) (*os.File, error) {
	fd, err := OpenFd(path, flag, create, p, devices)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenFd is OpenFile returning the bare descriptor (for a lock, whose
// descriptor is the lock): four system calls at most on the usual paths.
func OpenFd(path string, flag int, create bool, p Policy, devices bool) (int, error) {
	for try := 0; ; try++ {
		fd, err := open(path, flag|OpenFlags, 0)
		if err == nil {
			return checkedFd(path, fd, p, devices)
		}
		if !create || err != syscall.ENOENT || try == 10 {
			return -1, OpenError(path, &os.PathError{Op: "open", Path: path, Err: err})
		}
		attrs := NewFileAttrs(filepath.Dir(path), p)
		fd, err = open(path, flag|os.O_CREATE|os.O_EXCL|OpenFlags, uint32(attrs.Perm))
		if err == syscall.EEXIST {
			continue // someone else made it: open theirs, and check it
		}
		if err != nil {
			return -1, OpenError(path, &os.PathError{Op: "create", Path: path, Err: err})
		}
		if attrs != Private {
			f := os.NewFile(uintptr(fd), path)
			err := attrs.Apply(f)
			if err == nil {
				fd, err = unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
			}
			f.Close()
			if err != nil {
				os.Remove(path)
				return -1, &os.PathError{Op: "create", Path: path, Err: err}
			}
		}
		return checkedFd(path, fd, p, devices)
	}
}

func open(path string, flag int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flag, perm)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func checkedFd(path string, fd int, p Policy, devices bool) (int, error) {
	var st syscall.Stat_t
	err := syscall.Fstat(fd, &st)
	if err == nil {
		err = checkStat(path, &st, p, devices)
	} else {
		err = &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}
