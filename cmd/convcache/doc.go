// Command convcache shows, checks and maintains convcache files: the cache
// that libconvcache.so keeps of cuDNN benchmark results, shared by every
// thread and process that uses it.
//
// Usage:
//
//	convcache stats   [PATH] [--json]
//	convcache ls      [PATH] [--scope S]... [--json]
//	convcache dump    [PATH] [--scope S]... [--json]
//	convcache verify  [PATH] [--strict] [--json]
//	convcache compact [PATH] [--lock-timeout D]
//	convcache prune   [PATH] [--scope S]... [--keep-scope S]... [--older-than D]
//	                  [--max-bytes N] [--dry-run] [--lock-timeout D]
//	convcache merge   A B... -o OUT [--scope S]...
//	convcache export  [PATH] [--scope S]... -o FILE
//	convcache import  [--cache PATH] [--scope S]... [--lock-timeout D] FILE...
//	convcache scope   [--device N] [--json]
//	convcache run     [--preload PATH] [--path FILE] [--scope S] [--tag T] [--mode M]
//	                  [--verbose] [--quiet] [--torch-v7] [--] COMMAND [ARGS...]
//	convcache doctor  [--python PY] [--preload PATH] [--path FILE] [--torch-v7]
//	                  [--json] [-- COMMAND [ARGS...]]
//	convcache config  [--prefix] [--cflags] [--libs] [--cmakedir] [--pkgconfigdir]
//	convcache version [--json]       (or convcache --version)
//	convcache completion bash|zsh|fish
//	convcache help [COMMAND]         (or convcache COMMAND --help, -h)
//
// PATH defaults to the default cache file: $CONVCACHE_PATH, else
// $XDG_CACHE_HOME/convcache/cache.ccdb, else ~/.cache/convcache/cache.ccdb.
// Flags are GNU style (--json; -o is --output, -h is --help, -v is run's
// --verbose) and may come before or after PATH, except run's and doctor's,
// which come before COMMAND. A scope S is a scope name, "current" (this machine's:
// $CONVCACHE_SCOPE, else the fingerprint of each CUDA device), or "#" and
// the 16 hex digits of a scope's hash as stats prints it.
//
// A PATH given on the command line must exist: every command says "PATH
// does not exist: check the path" and exits 3, so a mistyped path never
// reads as an empty cache. The default cache file may not exist yet (no
// program has used the cache on this machine): stats, ls, dump, verify
// and compact agree that it has not been created yet, nothing cached yet,
// and exit 0 (so `convcache verify || fail` passes on a fresh machine);
// prune and export, which need a file, exit 3 saying it has not been
// created yet. A file that is not a convcache file
// is said to be one, with its cause (unknown magic number, empty); only a
// convcache file of a newer format version asks for an upgrade.
//
// The command line is parsed by spf13/cobra. help COMMAND and COMMAND
// --help print the command's help on standard output and exit 0;
// convcache with no command prints the usage on standard error and exits 2.
// A bad flag or argument prints one line that says what is wrong, then the
// command's usage, on standard error, and exits 2.
//
// # Commands
//
// stats summarises a cache file: entries, bytes and last use per scope, the
// file's size split into the compacted snapshot and the journal appended
// since, the time of the last compaction, the file system (with a warning on a network file system), damage (a torn
// tail, a warning, apart from corrupt records), the mode and bounds the
// environment sets (CONVCACHE_MODE, CONVCACHE_MAX_BYTES,
// CONVCACHE_MAX_ENTRIES), the read-only system tier named by
// CONVCACHE_SYSTEM_PATH, and whether the remote tier named by
// CONVCACHE_REMOTE answers (one read-only lookup, bounded by
// CONVCACHE_REMOTE_TIMEOUT_MS, default 50 ms, as in the library: it tells
// whether a library handle's lookups would get through). The default cache
// file not created yet is reported as such, not as an error. The last compaction is the
// header's time when a snapshot follows the header (compaction, merge,
// export and import write one), and "never" (null in JSON) when the file
// starts with its journal: then the header's time is the file's creation.
// A file compacted when it held no entries has no snapshot either, and
// reads as never compacted.
//
// ls lists entries, one line each, grouped by scope. Keys of the layouts
// convcache knows are decoded through package cudnn: PyTorch's
// ConvolutionParams (104 bytes), the same behind a BenchmarkCache name as
// convcache.hpp stores it (name, NUL, params), and the LD_PRELOAD
// interposer's find keys ("ccf1"). A value is decoded as cuDNN perf structs
// only when its key says it holds them: an interposer key, or a
// BenchmarkCache name whose dot-separated parts include "cudnn" and end in
// the direction (fwd, bwd_data, bwd_filter), as PyTorch's
// "torch.cudnn.v7.fwd" and the demo's "demo.cudnn.fwd" do. The values the
// demo's CPU autotuner stores under "demo.conv2d.fwd" (its own 48-byte
// AlgoChoice, drawn in demo.go) are decoded as the demo's choice: the
// implementation chosen, its time and workspace, the other candidates'
// times and how long choosing took. Any other value, 48 bytes or not, is
// shown as hex and its size. For example:
//
//	torch.cudnn.v7.fwd float NCHW 32x64x56x56 * 64x64x3x3 pad 1 stride 1 -> IMPLICIT_PRECOMP_GEMM 0.12 ms ws 0 B
//	demo.conv2d.fwd float NCHW 1x256x6x6 * 256x256x3x3 pad 1 stride 1 -> winograd 0.0227 ms ws 4.3 MiB (direct 0.0253, im2col+gemm 0.0269 ms; tuning took 0.311 ms)
//	my.conv2d.fwd float NCHW 1x256x6x6 * 256x256x3x3 pad 1 stride 1 -> 0300000000000000a4fbb93c000000000080440000000000af26cf3c5c72dc3c... (48 B)
//
// Keys of no known layout are shown in hex too. dump adds the insert and last-use times and
// a hex dump of every key and value. With --json both print an array of
// objects (scope, scope_hash, layout, op, key, value, time_ms, key_bytes,
// value_bytes, inserted, used; dump adds key_hex, value_hex and the decoded
// fields: params, find_key, perfs, demo_choice).
//
// verify reads every record and checks its CRC-32C, the header and the
// file's structure, and prints each damaged range with its offset. A torn
// tail (a last record cut short) is a warning, not damage: it is what a
// writer killed mid-append leaves, or what a writer appending at this moment
// looks like; it loses nothing that was acknowledged, and the next writer
// removes it. --strict counts it as damage too. compact drops damage.
//
// compact rewrites the file as a snapshot holding every entry, under the
// cache's lock, and publishes it by rename: processes using the file carry
// on and pick the new file up on their next miss. Damaged records and torn
// tails are dropped. Nothing is evicted (that is prune's job). The default
// cache file not created yet, an empty file, or one that holds no records
// is nothing to do: compact prints one line saying so and exits 0 (a
// compactor started before any writer, from cron or a sidecar, is normal:
// name its file with CONVCACHE_PATH, since a PATH must exist).
//
// prune removes entries under the lock, and prints each one with the reason.
// --scope S limits it to scope S (alone, it removes that scope);
// --keep-scope S removes every other scope (--keep-scope current keeps this
// machine's); --older-than D removes entries not used for D (90m, 36h, 30d,
// 2w; use is recorded when a process saves or closes); --max-bytes N then
// evicts the least recently used entries until the rest take at most N bytes
// (512M, 2G), counting keys, values and 16 bytes per entry as
// CONVCACHE_MAX_BYTES does. --dry-run only prints.
//
// merge combines cache files into a new file OUT, which must not exist.
// Where two files hold different values for one key of one scope, the value
// with the faster measured time is kept when both are decoded cuDNN perf
// results, and the entry inserted later otherwise. Each conflict is printed
// with both values and the reason.
//
// export writes the entries of the chosen scopes (default: all) to a new
// bundle. A bundle is a cache file: zstd-compressed snapshot chunks, each
// with its checksum, scope names included. So a bundle can be verified,
// listed and merged like any cache, and shipped in a container image as the
// read-only system tier (CONVCACHE_SYSTEM_PATH) without importing it.
//
// import merges bundles (or any cache files) into the live cache, by the
// same rules as merge, while other processes use it: it holds the cache's
// lock while it merges and publishes the result by rename, so no append is
// lost and no reader sees a partial file. The cache file is created if
// missing.
//
// scope prints this machine's fingerprint (the scope its results are stored
// under) for each CUDA device, or why there is none. --device N prints only
// device N's scope string, as the library computes it, for scripts.
//
// run starts a program under the LD_PRELOAD interposer, as ccache does a
// compiler: convcache run [flags] -- COMMAND [ARGS...]. It appends
// libconvcache_preload.so to LD_PRELOAD (keeping what is there), sets
// CONVCACHE_PATH (--path, made absolute), CONVCACHE_SCOPE (--scope),
// CONVCACHE_TAG (--tag), CONVCACHE_MODE (--mode), CONVCACHE_PRELOAD_LOG and
// CONVCACHE_VERBOSE (--verbose), and TORCH_CUDNN_V8_API_DISABLED=1
// (--torch-v7, which puts PyTorch on the cuDNN v7 path whose find calls the
// interposer caches, and prints a one-line note on what that costs), then
// execs COMMAND in its own place. So COMMAND receives every signal sent to
// convcache run's process (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2
// and the rest) with nothing in between, and its exit status, a death by
// signal included, is what the caller sees (a shell reports 128+N). The
// interposer is --preload PATH, else the first that exists of
// libconvcache_preload.so beside this command (build/), in ../lib, ../lib64
// and ../lib/<multiarch> of its directory (PREFIX/bin and PREFIX/lib), and
// beside $CONVCACHE_LIBRARY when it names a path; libconvcache.so.1 must be
// beside it, where the interposer loads it from. LD_PRELOAD gets its
// absolute, clean path (a relative $CONVCACHE_LIBRARY is taken from the
// current directory; where that cannot be done, run exits 125), so a
// command that changes directory loads the same file. LD_PRELOAD is read
// as glibc's loader reads it: names separated by spaces and colons only,
// so a tab or a newline is part of a name; the interposer is added unless
// one of those names is exactly its path. --path is checked before COMMAND
// starts (usable.go): a directory, a file that cannot be created or is not
// writable by the user (outside modes ro and off) is one line, exit 2.
// Unless --quiet or CONVCACHE_QUIET=1, run sets CONVCACHE_REPORT to the
// cache file's path, and a process of COMMAND that used cuDNN prints one
// report line at exit (the interposer's counters.c; docs/interposer.md).
//
// doctor says what convcache run would do for a program, and what stands
// in the way, as findings (ok, note, warning, problem), each with one line
// of advice: the cache file (--path, else the default) and its state, and
// the mode the environment sets; this machine's scope for each GPU (model,
// driver and cuDNN, read from the cuDNN that torch loads) and the entries
// the file holds for it; the interposer (--preload, else where run looks)
// and the PyTorch paths it serves, read from the functions its ELF dynamic
// symbol table exports: v7 (the six cudnnFindConvolution* functions) and
// v8 (the six cudnnBackend* functions); for a PyTorch program (--python
// PY, else the command's own interpreter, else python3, which runs
// doctor_probe.py): torch's version, CUDA and cuDNN, the path it takes (v8,
// or v7 when TORCH_CUDNN_V8_API_DISABLED is exactly 1, which --torch-v7
// sets as run's does) and whether run serves it; that the program must set
// torch.backends.cudnn.benchmark = True (PyTorch's default is False): given
// the program (convcache doctor -- python train.py), the doctor reads its
// script (the first .py argument, or the -c code) for the assignment and
// for TORCH_CUDNN_V8_API_DISABLED, and says that this is a heuristic; and
// whether the functions of torch's path that libtorch_cuda.so imports bind
// to the interposer, the check make torch-check makes: an import of torch
// under the interposer with LD_BIND_NOW=1 and LD_DEBUG=bindings (and
// CONVCACHE_DISABLE=1). Each run of the interpreter is bounded by 3
// minutes. No device fingerprint (no CUDA driver or GPU), a script that
// does not set benchmark mode (read even when the interpreter has no
// torch), and a cache path the program could not use (usable.go) are
// problems. doctor exits 0 when nothing stands in the way (warnings and
// notes included; only then does it say "Nothing stands in the way"), 1
// when a problem does, 2 for its own usage errors; it changes nothing.
//
// version (and --version) prints the library version the command was built
// from (CONVCACHE_VERSION_STRING in include/convcache.h, copied into
// version_header.go by go generate; a test checks the two agree), the
// newest file format it reads, and the Go toolchain and platform.
// completion prints a bash, zsh or fish completion script.
//
// Text output prints every string read from a file (scope names above all)
// with control characters, invalid UTF-8 and non-printing characters
// escaped (\x1b, \r, \n, \xff, \u202e; a backslash as \\), so a file cannot
// send escape sequences to the terminal or forge lines of output. JSON
// output is escaped by encoding/json.
//
// The command ignores CONVCACHE_MODE and CONVCACHE_DISABLE: its writes are
// asked for explicitly. It reads CONVCACHE_PATH, CONVCACHE_SCOPE,
// CONVCACHE_TAG, CONVCACHE_LOCK_TIMEOUT_MS, CONVCACHE_CUDA_LIBRARY and
// CONVCACHE_CUDNN_LIBRARY as the library does, and reports the others.
//
// merge, import and verify show a progress bar on standard error when it is
// a terminal, and nothing otherwise.
//
// # Exit codes
//
//	0  success
//	1  damage found: verify found corrupt records or a bad structure, or a
//	   file's header is damaged; doctor found a problem in the way of
//	   caching
//	2  usage: a bad flag or argument, a scope with no entries to export or
//	   import, an output file that already exists
//	3  I/O or format error: a file does not exist (a PATH given, or the
//	   default file for verify, prune and export), could not be read or
//	   written, or is not a convcache file (or is of a newer format version)
//	4  no device fingerprint: scope (or a --scope/--keep-scope current)
//	   found no CUDA driver, device or cuDNN, and CONVCACHE_SCOPE is not set
//	5  the cache's lock was not free within --lock-timeout (default
//	   $CONVCACHE_LOCK_TIMEOUT_MS, 5 s): another process holds it; retry
//
// run exits with its command's status. Before the command starts, it exits
// as env(1) does: 2 for a bad flag or a --path it could not use, 125 when the interposer (or the library
// beside it) cannot be found, 126 when COMMAND cannot be run, 127 when
// COMMAND is not found.
//
// Every error is one line on standard error that names the file and says
// what to do.
package main
