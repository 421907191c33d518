/*
 * convcache.h - a persistent, process-shared cache of convolution algorithm
 * choices (cuDNN benchmark results), or of any small opaque key/value pair.
 *
 * Link with -lconvcache (pkg-config: convcache). Every function is safe to
 * call from many threads at once, on one handle or several, convcache_close
 * included (see there), and any number of processes may open the same
 * file.
 *
 * Conventions
 *   - Functions return 0 (CONVCACHE_OK) or a positive status on success and
 *     a negative CONVCACHE_E_* code on failure. The codes are fixed: they
 *     are never renumbered. convcache_strerror() names them, and
 *     convcache_last_error() describes the calling thread's last failure,
 *     naming the file and what to do.
 *   - Keys and values are opaque bytes. Keys are 1..CONVCACHE_KEY_MAX bytes,
 *     values 0..CONVCACHE_VALUE_MAX bytes. Keys are compared in full.
 *   - The library never keeps a pointer you pass in after the call returns,
 *     and never returns memory you must free.
 *   - Nothing here aborts, exits or raises a signal in your process.
 *
 * Define CONVCACHE_DYNAMIC before including this header to resolve the API
 * at run time with dlopen instead of linking (see convcache_dynamic.h).
 */
#ifndef CONVCACHE_H
#define CONVCACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CONVCACHE_API marks the library's functions. With CONVCACHE_DYNAMIC they
 * become static functions, defined by convcache_dynamic.h (included at the
 * end of this header), that load the library on first use. */
#ifndef CONVCACHE_API
#ifdef CONVCACHE_DYNAMIC
#define CONVCACHE_API static
#else
#define CONVCACHE_API extern
#endif
#endif

/* ---- Version ------------------------------------------------------------ */

#define CONVCACHE_VERSION_MAJOR 1
#define CONVCACHE_VERSION_MINOR 0
#define CONVCACHE_VERSION_PATCH 0
#define CONVCACHE_VERSION_NUMBER \
    (CONVCACHE_VERSION_MAJOR * 10000 + CONVCACHE_VERSION_MINOR * 100 + CONVCACHE_VERSION_PATCH)
#define CONVCACHE_VERSION_STRING "1.0.0"

/* ---- Limits ------------------------------------------------------------- */

#define CONVCACHE_KEY_MAX   4096      /* bytes in a key (at least 1) */
#define CONVCACHE_VALUE_MAX 1048576   /* bytes in a value */
#define CONVCACHE_SCOPE_MAX 4096      /* bytes in a scope name */

/* ---- Status and error codes (fixed values) ------------------------------ */

#define CONVCACHE_OK            0   /* success */
#define CONVCACHE_HIT           1   /* find / get_or_create: the value came from the cache */
#define CONVCACHE_PENDING       2   /* insert: kept in memory; the file lock was busy, a later
                                       insert or save writes it */

#define CONVCACHE_E_INVALID     (-1)  /* a NULL pointer or an invalid argument */
#define CONVCACHE_E_HANDLE      (-2)  /* not an open handle (closed, or never opened) */
#define CONVCACHE_E_SIZE        (-3)  /* key, value or scope length out of range */
#define CONVCACHE_E_RANGE       (-4)  /* value buffer too small; *value_len holds the size needed */
#define CONVCACHE_E_IO          (-5)  /* a read, write, fsync or rename failed */
#define CONVCACHE_E_ACCESS      (-6)  /* permission denied or read-only file system */
#define CONVCACHE_E_NOSPC       (-7)  /* no space left on the device; the file is left intact */
#define CONVCACHE_E_FORMAT      (-8)  /* not a convcache file (empty, foreign) or a newer format;
                                         the file is left untouched */
#define CONVCACHE_E_CORRUPT     (-9)  /* the file header is damaged; the file is left untouched */
#define CONVCACHE_E_LOCK        (-10) /* the file lock was not available within the lock timeout */
#define CONVCACHE_E_READONLY    (-11) /* the handle is read-only (mode ro, a cache or lock file
                                         it may not use, or a read-only file); inserted values
                                         stay in memory */
#define CONVCACHE_E_FORKED      (-12) /* called in a child forked after the library started;
                                         the child must exec or use its own process */
#define CONVCACHE_E_MISS        (-13) /* a miss in strict mode */
#define CONVCACHE_E_UNAVAILABLE (-14) /* the library, driver or device is not available */
#define CONVCACHE_E_BUILDER     (-15) /* a builder failed with a positive code or a bad length */
#define CONVCACHE_E_INTERNAL    (-16) /* an internal error (a bug); the host process is unharmed */

/* Builders may return their own negative codes at or below this value; they
 * are passed through to the caller unchanged. */
#define CONVCACHE_E_USER        (-1000)

/* The codes above, each once, as X-macro lists for code that must handle
 * every one: convcache_strerror, convcache_dynamic.h's fallback and
 * convcache.hpp's exception classes expand them, and capi/codes_test.go
 * checks the library's Go side against them. A new code gets its #define
 * above and its row here.
 *
 *   CONVCACHE_STATUS_LIST(X): X(NAME, message) for CONVCACHE_NAME (>= 0).
 *   CONVCACHE_ERROR_LIST(X):  X(NAME, message, cxx_class, cxx_group) for
 *     CONVCACHE_E_NAME: message is convcache_strerror's; convcache.hpp
 *     throws convcache::cxx_class, derived from convcache::cxx_group. */
#define CONVCACHE_STATUS_LIST(X)                                          \
    X(OK, "success")                                                      \
    X(HIT, "hit")                                                         \
    X(PENDING, "kept in memory; not yet written (lock busy)")

#define CONVCACHE_ERROR_LIST(X)                                                                    \
    X(INVALID, "invalid argument", invalid_error, usage_error)                                     \
    X(HANDLE, "not an open handle", handle_error, usage_error)                                     \
    X(SIZE, "key, value or scope size out of range", size_error, usage_error)                      \
    X(RANGE, "value buffer too small", range_error, usage_error)                                   \
    X(IO, "I/O error", io_error, file_error)                                                       \
    X(ACCESS, "permission denied", access_error, file_error)                                       \
    X(NOSPC, "no space left on device", no_space_error, file_error)                                \
    X(FORMAT, "not a convcache file, or a newer format", format_error, file_error)                 \
    X(CORRUPT, "cache file header is damaged", corrupt_error, file_error)                          \
    X(LOCK, "timed out waiting for the cache lock", lock_error, file_error)                        \
    X(READONLY, "cache is read-only", read_only_error, file_error)                                 \
    X(FORKED, "called in a forked child", forked_error, error)                                     \
    X(MISS, "miss in strict mode", miss_error, error)                                              \
    X(UNAVAILABLE, "not available", unavailable_error, error)                                      \
    X(BUILDER, "builder failed", builder_error, error)                                             \
    X(INTERNAL, "internal error", internal_error, error)

/* convcache_strerror's names for codes in no list: a builder's own code
 * (<= CONVCACHE_E_USER), and any other. */
#define CONVCACHE_STRERROR_USER    "builder error"
#define CONVCACHE_STRERROR_UNKNOWN "unknown code"

/* ---- Modes -------------------------------------------------------------- */

#define CONVCACHE_MODE_DEFAULT 0 /* $CONVCACHE_MODE, else read-write */
#define CONVCACHE_MODE_RW      1 /* find and insert */
#define CONVCACHE_MODE_RO      2 /* find; never write the file */
#define CONVCACHE_MODE_OFF     3 /* every find misses, every insert succeeds without writing */
#define CONVCACHE_MODE_RECACHE 4 /* ignore hits; write fresh results over old ones */
#define CONVCACHE_MODE_STRICT  5 /* a miss is an error (CONVCACHE_E_MISS) */

/* ---- Handles ------------------------------------------------------------ */

/* An open cache: one file seen through one scope. Opaque; safe to share
 * between threads. A closed or invalid handle is detected and rejected with
 * CONVCACHE_E_HANDLE rather than dereferenced.
 *
 * In C the type is `convcache`. C++ gives that name to the namespace of
 * convcache.hpp (convcache::Cache, convcache::BenchmarkCache), and allows no
 * other global entity of the same name, so in C++ the handle type is
 * `convcache_handle`. C has `convcache_handle` too, as an alias; the
 * prototypes below use it so that they read the same in both languages. */
#ifdef __cplusplus
typedef struct convcache_handle convcache_handle;
#else
typedef struct convcache convcache;
typedef convcache convcache_handle;
#endif

/*
 * convcache_open - open (creating if needed) a cache file.
 *
 * path   The cache file. NULL means the default: $CONVCACHE_PATH, else
 *        $XDG_CACHE_HOME/convcache/cache.ccdb, else
 *        ~/.cache/convcache/cache.ccdb. Missing directories are created with
 *        mode 0700 and the file with mode 0600 (0660 in a group directory
 *        with CONVCACHE_TRUST_SHARED=1: see "Shared directories" below).
 * scope  The environment fingerprint (for example convcache_cudnn_scope()'s
 *        output). Entries written under one scope are never returned under
 *        another; they stay in the file. NULL means $CONVCACHE_SCOPE, else
 *        "default". At most CONVCACHE_SCOPE_MAX bytes.
 * out    Receives the handle. Set to NULL on failure.
 *
 * Environment: CONVCACHE_DISABLE, CONVCACHE_MODE, CONVCACHE_LOCK_TIMEOUT_MS,
 * CONVCACHE_BUILD_TIMEOUT_MS, CONVCACHE_MAX_BYTES, CONVCACHE_MAX_ENTRIES and
 * CONVCACHE_TRUST_SHARED (see docs/environment.md). A nonsense value prints one
 * warning on stderr and its default is used. In a privileged process
 * (AT_SECURE: set-user-ID, set-group-ID or file capabilities) no variable
 * is read, as with secure_getenv: the defaults apply, and there is no
 * default path (path NULL gives CONVCACHE_E_INVALID).
 *
 * Shared directories. The cache file, its lock file (path + ".lock") and
 * the log may sit where other users can write (/tmp, a group directory),
 * so they are opened as ccache and sqlite open theirs:
 *   - A symbolic link at path is followed only if this user or root owns
 *     it (each link of a chain); the lock file is never a link. Files are
 *     opened with O_NOFOLLOW and O_NONBLOCK, then checked with fstat.
 *   - A cache file that is not a regular file, or is owned by another user
 *     (root counts as trusted), or is writable by group or others, or is
 *     reached through a link another user owns, is NOT USED: the open
 *     still returns CONVCACHE_OK (so a host fails open), one warning goes
 *     to stderr, the file is never read, every find misses (except on
 *     entries inserted through the handle), inserts and saves return
 *     CONVCACHE_E_READONLY with the entries kept in memory, and
 *     convcache_stats reports read_only = 1. The same holds for a file that
 *     replaces it later (a peer's compaction), read on a miss.
 *   - A lock file that is a link, not a regular file, another user's, or
 *     group- or world-writable makes the handle read-only the same way, at
 *     once (never waiting on a lock its owner could hold forever); the
 *     cache file itself is still used if it may be.
 *   - CONVCACHE_TRUST_SHARED=1 uses files of other owners and group- or
 *     world-writable files (a cache shared on purpose, such as a group
 *     directory); not links of other users, nor non-regular files. With it,
 *     a new cache or lock file in a directory its group may write is made
 *     0660 in that directory's group, whatever the umask.
 *   - Compaction keeps the mode and group of the file it replaces.
 * A file of root's that this user may not write (a shipped cache) is
 * opened read-only and used, with a warning.
 *
 * Returns CONVCACHE_OK, or CONVCACHE_E_INVALID (out is NULL, path is a
 * directory), CONVCACHE_E_SIZE (scope too long), CONVCACHE_E_ACCESS,
 * CONVCACHE_E_IO, CONVCACHE_E_FORMAT (empty, foreign or newer file),
 * CONVCACHE_E_CORRUPT (damaged header), CONVCACHE_E_FORKED.
 */
CONVCACHE_API int convcache_open(const char *path, const char *scope, convcache_handle **out);

/* Options for convcache_open_ex. Zero every field you do not set
 * (convcache_options_init does), and set struct_size so that the library
 * can tell which fields your header version has. */
typedef struct convcache_options {
    size_t struct_size;       /* sizeof(convcache_options) */
    const char *path;         /* as convcache_open; NULL = default */
    const char *scope;        /* as convcache_open; NULL = $CONVCACHE_SCOPE or "default" */
    int mode;                 /* CONVCACHE_MODE_*; 0 = $CONVCACHE_MODE or read-write */
    int lock_timeout_ms;      /* 0 = $CONVCACHE_LOCK_TIMEOUT_MS or 5000 */
    int build_timeout_ms;     /* 0 = $CONVCACHE_BUILD_TIMEOUT_MS or 60000 */
    int reserved0;
    int64_t max_bytes;        /* 0 = $CONVCACHE_MAX_BYTES or unbounded */
    int64_t max_entries;      /* 0 = $CONVCACHE_MAX_ENTRIES or unbounded */
    const char *system_path;  /* read-only tier; NULL = $CONVCACHE_SYSTEM_PATH */
    const char *remote;       /* redis[s]://...; NULL = $CONVCACHE_REMOTE; "" = none */
    int remote_timeout_ms;    /* 0 = $CONVCACHE_REMOTE_TIMEOUT_MS or the default */
    int reserved1;
} convcache_options;

/* convcache_options_init - zero *opts and set its struct_size. */
CONVCACHE_API void convcache_options_init(convcache_options *opts);

/*
 * convcache_open_ex - open a cache with options. Fields left zero take their
 * environment value or default, as convcache_open.
 *
 * Returns as convcache_open, and CONVCACHE_E_INVALID if opts is NULL or
 * opts->struct_size is 0, larger than this library knows, or does not end
 * on a whole field of convcache_options (sizes of older, shorter versions
 * of the struct end on a field; one that cuts a field is refused before
 * anything in it is read).
 */
CONVCACHE_API int convcache_open_ex(const convcache_options *opts, convcache_handle **out);

/*
 * convcache_close - write what can be written without waiting long, and
 * release the handle. Does not fsync (call convcache_save for that).
 * Accepts NULL and already-closed handles.
 *
 * Other calls on the handle may race it, from any thread (a host's static
 * destructors closing a handle while its threads still find, a thread
 * exiting mid-call): each call that races the close either completes as
 * it would have before the close, or returns CONVCACHE_E_HANDLE
 * (convcache_peek: 0, a miss); every call made after it returns
 * CONVCACHE_E_HANDLE. None crashes, none leaves a file descriptor, a lock
 * or pinned memory behind, and none reaches another handle: a handle's
 * value carries a generation, so an open that reuses its slot gets another
 * one. A convcache_save that returns CONVCACHE_E_HANDLE may not have
 * synced (the close does not fsync); a convcache_get_or_create whose
 * handle closes while its builder runs returns CONVCACHE_E_HANDLE, and the
 * value is not stored. This holds for every function taking a handle, and
 * for the C++ interface and drop-ins built on them.
 */
CONVCACHE_API void convcache_close(convcache_handle *c);

/* ---- Find, insert, load, save ------------------------------------------- */

/*
 * convcache_find - look a key up.
 *
 * On a hit copies the value to value[0..value_cap) and sets *value_len to
 * its length. A hit reads memory only. A miss first checks the file for
 * entries other processes appended since (cheap when nothing changed), so
 * a peer's result is a hit without reloading. Never waits for a lock.
 *
 * value may be NULL only when value_cap is 0. Any value_cap is accepted; one
 * above CONVCACHE_VALUE_MAX counts as CONVCACHE_VALUE_MAX (no value is
 * larger), so SIZE_MAX is fine.
 *
 * Returns CONVCACHE_HIT (1), 0 on a miss, or CONVCACHE_E_RANGE (value_cap too
 * small: *value_len is set to the size needed and nothing is written),
 * CONVCACHE_E_INVALID (NULL c, key or value_len), CONVCACHE_E_SIZE (key_len
 * 0 or above CONVCACHE_KEY_MAX), CONVCACHE_E_HANDLE, CONVCACHE_E_MISS
 * (strict mode), CONVCACHE_E_FORKED.
 */
CONVCACHE_API int convcache_find(convcache_handle *c, const void *key, size_t key_len,
                   void *value, size_t value_cap, size_t *value_len);

/*
 * convcache_peek - look a key up in memory only, as convcache_find's hit
 * does, and nothing more: a key not in memory is 0 (a miss), without
 * looking at the file or another tier. It never enters the library's Go
 * runtime, so it also answers in a child forked after the library started
 * (a PyTorch DataLoader worker), from the entries the parent held at the
 * fork; every other call refuses there with CONVCACHE_E_FORKED. Counts as a
 * hit in the statistics. A value longer than value_cap, a handle in
 * CONVCACHE_MODE_RECACHE or with a verbose log, and a closed or unknown
 * handle are 0 too: peek reports no errors but bad arguments.
 *
 * Returns CONVCACHE_HIT (1), 0, CONVCACHE_E_INVALID (NULL c, key or
 * value_len), CONVCACHE_E_SIZE (key_len 0 or above CONVCACHE_KEY_MAX).
 */
CONVCACHE_API int convcache_peek(convcache_handle *c, const void *key, size_t key_len,
                   void *value, size_t value_cap, size_t *value_len);

/*
 * convcache_insert - set a key's value, replacing any earlier value.
 *
 * The record is appended to the file before the call returns, so a process
 * killed right after loses nothing (call convcache_save to survive a power
 * failure too). Writers wait for the file lock at most the lock timeout.
 *
 * Returns CONVCACHE_OK, or CONVCACHE_PENDING (the lock was busy: the entry is
 * in memory and the next insert or save writes it), CONVCACHE_E_INVALID,
 * CONVCACHE_E_SIZE, CONVCACHE_E_HANDLE, CONVCACHE_E_READONLY (kept in memory
 * only), CONVCACHE_E_NOSPC (kept in memory, retried by the next insert or
 * save), CONVCACHE_E_IO, CONVCACHE_E_FORMAT (the file was replaced by a
 * foreign one), CONVCACHE_E_FORKED.
 */
CONVCACHE_API int convcache_insert(convcache_handle *c, const void *key, size_t key_len,
                     const void *value, size_t value_len);

/*
 * convcache_load - pick up everything in the file, including what other
 * processes wrote since the last look. (Misses do this on their own; call
 * it to warm up before a latency-sensitive phase.)
 *
 * Returns CONVCACHE_OK, CONVCACHE_E_INVALID, CONVCACHE_E_HANDLE,
 * CONVCACHE_E_IO, CONVCACHE_E_FORMAT, CONVCACHE_E_CORRUPT,
 * CONVCACHE_E_FORKED.
 */
CONVCACHE_API int convcache_load(convcache_handle *c);

/*
 * convcache_save - make everything inserted through this handle durable.
 *
 * Writes entries kept in memory and the record of which entries were used
 * (for LRU eviction), compacts the file if its journal has grown enough, and
 * fsyncs. Returns CONVCACHE_OK only when everything inserted through this
 * handle is on stable storage; otherwise CONVCACHE_E_LOCK, CONVCACHE_E_NOSPC,
 * CONVCACHE_E_IO, CONVCACHE_E_READONLY (entries are in memory only),
 * CONVCACHE_E_INVALID, CONVCACHE_E_HANDLE, CONVCACHE_E_FORKED.
 */
CONVCACHE_API int convcache_save(convcache_handle *c);

/* ---- Single-flight builds ----------------------------------------------- */

/*
 * A builder produces the value for a missing key (typically by running the
 * benchmark). It writes the value to value[0..value_cap) and sets
 * *value_len. It returns 0 on success; any other value fails the build.
 * key and value are the ones passed to convcache_get_or_create; user is its
 * user argument. A builder may call other convcache functions, but asking
 * for the same key again waits for itself until the build timeout.
 */
typedef int (*convcache_builder)(void *user, const void *key, size_t key_len,
                                 void *value, size_t value_cap, size_t *value_len);

/*
 * convcache_get_or_create - find key, or build and insert its value.
 *
 * Builds are single-flight: threads of one process asking for the same
 * missing key run the builder once and share its value, and processes
 * sharing the file wait for each other through a per-key lock, so N ranks
 * that miss the same key together benchmark it once. A waiter waits at most
 * the build timeout (CONVCACHE_BUILD_TIMEOUT_MS), then builds itself. A
 * builder whose process dies releases its waiters at once.
 *
 * Returns CONVCACHE_HIT (1) when the value came from the cache or another
 * builder, CONVCACHE_OK (0) when this call ran the builder (a value it could
 * not write to the file is kept in memory), or a negative error: the
 * builder's own code when it returned a negative one (nothing is stored),
 * CONVCACHE_E_BUILDER for a positive one, CONVCACHE_E_RANGE (value_cap too
 * small; *value_len holds the size needed), CONVCACHE_E_MISS (strict mode:
 * the builder is not run), CONVCACHE_E_INVALID, CONVCACHE_E_SIZE,
 * CONVCACHE_E_HANDLE, CONVCACHE_E_FORKED.
 *
 * A value_cap above CONVCACHE_VALUE_MAX counts as CONVCACHE_VALUE_MAX, and
 * the builder is passed that.
 */
CONVCACHE_API int convcache_get_or_create(convcache_handle *c, const void *key, size_t key_len,
                            convcache_builder build, void *user,
                            void *value, size_t value_cap, size_t *value_len);

/* ---- Statistics --------------------------------------------------------- */

/* Like struct stat and stat(), the struct and the function share a name:
 * write "struct convcache_stats". */
struct convcache_stats {
    size_t struct_size;       /* in: sizeof(convcache_stats); out: bytes filled */
    uint64_t hits;            /* finds answered by the cache */
    uint64_t hits_memory;     /*   on entries inserted through this handle */
    uint64_t hits_file;       /*   on entries read from the file (persistent hits) */
    uint64_t misses;
    uint64_t inserts;
    uint64_t builds;          /* builders run by get_or_create */
    uint64_t entries;         /* entries of this scope in memory */
    uint64_t pending;         /* entries in memory not yet written */
    uint64_t mem_bytes;       /* memory held by the index */
    uint64_t file_bytes;      /* size of the file as last seen */
    uint64_t journal_bytes;   /* appended since the last compaction */
    uint64_t snapshot_bytes;  /* compacted snapshot */
    uint64_t lock_waits;      /* lock acquisitions that had to wait */
    uint64_t lock_wait_ns;    /* total time spent waiting for locks */
    uint64_t compactions;     /* compactions run by this handle */
    uint64_t evictions;       /* entries evicted by those compactions */
    uint64_t damaged_bytes;   /* bytes of damaged records skipped */
    int64_t last_compaction_ms; /* unix ms when the file was last compacted; 0 if never */
    int32_t read_only;        /* 1 if the handle never writes its file */
    int32_t network_fs;       /* 1 if the file is on NFS, Lustre, GPFS, CIFS, ... */
    uint64_t hits_system;     /* hits served by the read-only system tier */
    uint64_t remote_hits;     /* local misses answered by the remote tier */
    uint64_t remote_misses;   /* remote lookups that found nothing */
    uint64_t remote_errors;   /* remote calls that failed or timed out */
    uint64_t remote_rejected; /* remote values ignored: bad checksum, key or scope */
    uint64_t remote_writes;   /* entries written to the remote tier */
    uint64_t remote_dropped;  /* queued remote writes dropped (queue full or down) */
};

/*
 * convcache_stats - read a handle's counters. Set out->struct_size first
 * (at least sizeof(size_t); larger than this library's struct is fine);
 * only whole fields that fit in it are written (none beyond it, and not
 * half of one it cuts), and out->struct_size is set to the bytes filled.
 *
 * Returns CONVCACHE_OK, CONVCACHE_E_INVALID, CONVCACHE_E_HANDLE,
 * CONVCACHE_E_FORKED.
 */
CONVCACHE_API int convcache_stats(convcache_handle *c, struct convcache_stats *out);

/* ---- cuDNN environment fingerprint -------------------------------------- */

/*
 * convcache_cudnn_scope - write the scope string for CUDA device `device`: a
 * canonical, versioned fingerprint of everything that makes a cuDNN
 * benchmark result valid (GPU model, compute capability, multiprocessor
 * count, driver, cuDNN and CUDA runtime versions, and $CONVCACHE_TAG).
 * $CONVCACHE_SCOPE, when set and not empty, is written instead, whatever
 * the device. Pass the result to convcache_open as the scope. The format
 * (version cc1, documented in docs/c-api.md) is
 *
 *   cc1;gpu=NAME;cc=MAJOR.MINOR;sms=N;driver=N;cudnn=N;cudart=N[;tag=TAG]
 *
 * with the numbers as cuDriverGetVersion, cudnnGetVersion and
 * cudnnGetCudartVersion report them, ';', '=' and control characters in
 * NAME replaced by '_', and TAG the verbatim $CONVCACHE_TAG when it is set
 * and not empty. A future format starts with another version field.
 *
 * device is the CUDA driver's ordinal (as cudaSetDevice numbers devices
 * under the same CUDA_VISIBLE_DEVICES). libcuda.so.1 and libcudnn.so.9
 * (else .8) are loaded at run time, preferring copies the process already
 * has; $CONVCACHE_CUDA_LIBRARY and $CONVCACHE_CUDNN_LIBRARY name other
 * files. Nothing is linked: the library loads and works without CUDA. In a
 * privileged process (AT_SECURE) none of these variables is read: only the
 * default libraries are loaded, and $CONVCACHE_SCOPE and $CONVCACHE_TAG do
 * not apply. Any cap is accepted (SIZE_MAX included): only the string and
 * its NUL are written.
 *
 * buf receives a NUL-terminated string of at most cap bytes.
 *
 * Returns the string's length (excluding the NUL) on success, or
 * CONVCACHE_E_RANGE (cap too small or 0; buf holds "" when cap > 0),
 * CONVCACHE_E_UNAVAILABLE (no driver, no cuDNN, no such device, or a driver
 * that did not answer within 30 s; see convcache_last_error),
 * CONVCACHE_E_SIZE (the scope would exceed CONVCACHE_SCOPE_MAX bytes, for
 * example a very long $CONVCACHE_TAG), CONVCACHE_E_INVALID (NULL buf,
 * negative device), CONVCACHE_E_FORKED. Never crashes or hangs on a machine
 * without a GPU.
 */
CONVCACHE_API int convcache_cudnn_scope(int device, char *buf, size_t cap);

/* ---- Errors and versions ------------------------------------------------ */

/* convcache_strerror - a static, human-readable name for a return code. */
CONVCACHE_API const char *convcache_strerror(int code);

/* convcache_last_error - a description of the calling thread's most recent
 * failure (naming the file and what to do), or "" if none. Valid until the
 * thread's next convcache call. */
CONVCACHE_API const char *convcache_last_error(void);

/* convcache_version - the library's version, "MAJOR.MINOR.PATCH". */
CONVCACHE_API const char *convcache_version(void);

/* convcache_version_number - the library's CONVCACHE_VERSION_NUMBER.
 * Compare with the header's to detect a mismatch. */
CONVCACHE_API int convcache_version_number(void);

#ifdef __cplusplus
}
#endif

#ifdef CONVCACHE_DYNAMIC
#include "convcache_dynamic.h"
#endif

#endif /* CONVCACHE_H */
