package cache

import "github.com/convcache/convcache/internal/errs"

// Errors returned by this package. Callers test them with errors.Is; the
// returned error usually wraps one of these with the file's path and advice.
// They are the values of internal/errs, which the file format and the tools
// return too: one set of errors for the whole module.
var (
	// Argument errors, reported before anything is read or written.

	// ErrInvalid reports a bad argument, such as an empty key.
	ErrInvalid = errs.ErrInvalid
	// ErrSize reports a key, value or scope longer than its limit.
	ErrSize = errs.ErrSize
	// ErrRange reports that a destination buffer is smaller than the value.
	ErrRange = errs.ErrRange
	// ErrClosed reports use of a closed Cache.
	ErrClosed = errs.ErrClosed

	// Errors opening or reading a file.

	// ErrFormat reports a file that is not a convcache file, is empty, or was
	// written by a newer format version. Such a file is never overwritten.
	ErrFormat = errs.ErrFormat
	// ErrCorrupt reports damage that cannot be skipped, such as a bad header.
	// Damaged records are skipped, not reported with this error.
	ErrCorrupt = errs.ErrCorrupt

	// Errors of the file system.

	// ErrIO reports a failed read, write, sync or rename.
	ErrIO = errs.ErrIO
	// ErrAccess reports a path that may not be written (permissions, a
	// read-only file system).
	ErrAccess = errs.ErrAccess

	// Errors writing.

	// ErrLock reports that the file lock could not be taken in time.
	ErrLock = errs.ErrLock
	// ErrPending reports that Insert kept an entry in memory because the file
	// lock was not available in time; a later Insert or Save persists it.
	ErrPending = errs.ErrPending
	// ErrReadOnly reports a write to a cache opened read-only.
	ErrReadOnly = errs.ErrReadOnly
	// ErrNoSpace reports that the file system is full. The file on disk is
	// left intact.
	ErrNoSpace = errs.ErrNoSpace
	// ErrMiss reports a miss in strict mode.
	ErrMiss = errs.ErrMiss
)
