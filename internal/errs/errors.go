package errs

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// The sentinels, grouped by when they happen. What each means is documented
// in package cache (cache/errors.go), which re-exports them.
var (
	// Argument errors.
	ErrInvalid = errors.New("convcache: invalid argument")
	ErrSize    = errors.New("convcache: size out of range")
	ErrRange   = errors.New("convcache: buffer too small for value")
	ErrClosed  = errors.New("convcache: cache is closed")

	// Errors opening or reading a file.
	ErrFormat  = errors.New("convcache: not a convcache file of a known version")
	ErrCorrupt = errors.New("convcache: file is corrupt")

	// Errors of the file system.
	ErrIO     = errors.New("convcache: I/O error")
	ErrAccess = errors.New("convcache: permission denied")

	// Errors writing.
	ErrLock     = errors.New("convcache: timed out waiting for the cache lock")
	ErrPending  = errors.New("convcache: entry kept in memory, not yet persisted")
	ErrReadOnly = errors.New("convcache: cache is read-only")
	ErrNoSpace  = errors.New("convcache: no space left on device")
	ErrMiss     = errors.New("convcache: miss in strict mode")
)

// detail is a sentinel with a finer cause or the circumstances.
type detail struct {
	base error
	msg  string
}

// Detail returns an error that reads as base followed by msg and wraps base.
func Detail(base error, msg string) error { return &detail{base, msg} }

func (e *detail) Error() string { return e.base.Error() + ": " + e.msg }
func (e *detail) Unwrap() error { return e.base }

// IO wraps an operating-system error with the file, the operation and what
// to do, as ErrIO, or ErrNoSpace for a full disk or quota, or ErrAccess for
// a path that may not be written.
func IO(err error, op, path, advice string) error {
	base := ErrIO
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
	return &detail{base, msg}
}
