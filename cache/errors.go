package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// Errors returned by this package. Callers test them with errors.Is; the
// returned error usually wraps one of these with the file's path and advice.
var (
	// Argument errors, reported before anything is read or written.

	// ErrInvalid reports a bad argument, such as an empty key.
	ErrInvalid = errors.New("convcache: invalid argument")
	// ErrSize reports a key, value or scope longer than its limit.
	ErrSize = errors.New("convcache: size out of range")
	// ErrRange reports that a destination buffer is smaller than the value.
	ErrRange = errors.New("convcache: buffer too small for value")
	// ErrClosed reports use of a closed Cache.
	ErrClosed = errors.New("convcache: cache is closed")

	// Errors opening or reading a file.

	// ErrFormat reports a file that is not a convcache file, is empty, or was
	// written by a newer format version. Such a file is never overwritten.
	ErrFormat = errors.New("convcache: not a convcache file of a known version")
	// ErrCorrupt reports damage that cannot be skipped, such as a bad header.
	// Damaged records are skipped, not reported with this error.
	ErrCorrupt = errors.New("convcache: file is corrupt")

	// Errors of the file system.

	// ErrIO reports a failed read, write, sync or rename.
	ErrIO = errors.New("convcache: I/O error")
	// ErrAccess reports a path that may not be written (permissions, a
	// read-only file system).
	ErrAccess = errors.New("convcache: permission denied")

	// Errors writing.

	// ErrLock reports that the file lock could not be taken in time.
	ErrLock = errors.New("convcache: timed out waiting for the cache lock")
	// ErrPending reports that Insert kept an entry in memory because the file
	// lock was not available in time; a later Insert or Save persists it.
	ErrPending = errors.New("convcache: entry kept in memory, not yet persisted")
	// ErrReadOnly reports a write to a cache opened read-only.
	ErrReadOnly = errors.New("convcache: cache is read-only")
	// ErrNoSpace reports that the file system is full. The file on disk is
	// left intact.
	ErrNoSpace = errors.New("convcache: no space left on device")
	// ErrMiss reports a miss in strict mode.
	ErrMiss = errors.New("convcache: miss in strict mode")
)

// Finer causes, each wrapping one of the errors above.
var (
	errEmpty           = wrapErr(ErrFormat, "file is empty")
	errForeign         = wrapErr(ErrFormat, "unknown magic number (not a convcache file)")
	errNewer           = wrapErr(ErrFormat, "format version is newer than this library")
	errTruncatedHeader = wrapErr(ErrCorrupt, "file header is truncated")
	errHeaderChecksum  = wrapErr(ErrCorrupt, "file header checksum mismatch")
)

type detailErr struct {
	base error
	msg  string
}

func wrapErr(base error, msg string) error { return &detailErr{base, msg} }
func (e *detailErr) Error() string         { return e.base.Error() + ": " + e.msg }
func (e *detailErr) Unwrap() error         { return e.base }

// ioErr wraps an operating-system error with the file, the operation and
// what to do, mapping a full disk to ErrNoSpace.
func ioErr(err error, op, path, advice string) error {
	var base error = ErrIO
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		base, advice = ErrNoSpace, "free some disk space"
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		base = ErrAccess
	}
	msg := fmt.Sprintf("%s %s: %v", op, path, err)
	if advice != "" {
		msg += "; " + advice
	}
	return &detailErr{base, msg}
}
