// Package cachefile holds the offline tools' view of a cache file: reading a
// whole file, every scope, without locking it (ReadFile, DecodeFile),
// building an image from entries (EncodeFile), and rewriting a file under
// its lock (Rewrite, Update, WriteNew). The convcache command, the torture
// test and the engine's own tests use it; the engine (package cache) does
// not. It follows the engine's rules: the same path resolution
// (ResolvePath), the same trust rules and the same error values.
package cachefile
