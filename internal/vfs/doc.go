// Package vfs is the file system as convcache uses it: the narrow set of
// operations the engine performs, behind an interface (FS) that tests
// replace to inject faults (a full disk, failed syncs), as Pebble's vfs
// does; and the few rules every writer of a cache file follows, written
// once for the engine and the offline tools:
//
//   - A path resolves as Resolve says: absolute, links at its final
//     component followed only where package internal/safefile allows.
//   - A file is published whole: written to a temporary file beside it,
//     synced, renamed (or linked) over the path, the directory synced
//     (Replace, WriteTemp). A crash leaves the old file or the new one.
//   - A replaced file's mode and group are kept.
//   - Damaged records a rewrite drops are kept beside the file first, in
//     PATH.damaged-TIMESTAMP, the newest KeepDamaged of them (SaveDamaged).
//
// It is Linux-only, as the engine is: the file system type comes from
// statfs magic numbers (fstype_linux.go).
package vfs
