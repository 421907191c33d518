// Package errs is convcache's error vocabulary: the sentinel values that the
// engine (package cache), the file format (internal/format), the file
// system layer (internal/vfs) and the offline tools (internal/cachefile)
// return, each wrapped with the file, the operation and what to do.
//
// Package cache re-exports every value under the same name, and documents
// there what each one means: errors.Is(err, cache.ErrFormat) holds whichever
// package returned the error. The C layer maps them to its fixed codes
// (capi/exports.go).
package errs
