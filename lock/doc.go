// Package lock provides the inter-process locks that coordinate writers of a
// convcache file.
//
// All locks are Linux open file description (OFD) byte-range locks taken on a
// dedicated sidecar file (the cache file itself is replaced by rename during
// compaction, so it cannot carry a lock). OFD locks, unlike classic POSIX
// fcntl locks, belong to an open file description rather than to a process:
// two threads of one process that each open the sidecar exclude each other,
// and closing an unrelated descriptor of the file does not drop the lock.
//
// Every acquisition opens a fresh descriptor, so a lock is never shared by
// accident between threads or handles, and the kernel releases it the moment
// its holder dies, including by SIGKILL.
//
// Byte layout of the sidecar file's lock space:
//
//	offset 0            the file lock: appends and compaction hold it exclusively
//	offset 1 + h%2^40   the key lock for a key whose hash is h (single-flight builds)
//	offset 2^41         held by a process while it compacts (one at a time)
//
// Waiting is bounded. Acquisition polls a non-blocking request with a short
// exponential backoff, so a timeout never leaves a thread blocked in the
// kernel, and EINTR (frequent under the Go runtime's signals) is retried.
//
// The lock file may sit in a directory other users can write. It is opened
// without following a link and checked like the cache file (package
// internal/safefile): a link, a FIFO, or a file another user owns or can
// write is refused at once (ErrRefused) rather than waited for, since its
// owner could hold the lock forever. NewShared accepts other owners, for a
// cache shared on purpose.
//
// # Caveats
//
//   - Locks on NFS, Lustre and other network file systems depend on the
//     server's lock manager and may be weaker than on a local disk.
//   - A process that is stopped (SIGSTOP) keeps its locks; callers bound their
//     wait with a timeout and degrade instead of hanging.
package lock
