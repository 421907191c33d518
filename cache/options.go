package cache

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/convcache/convcache/internal/format"
	"github.com/convcache/convcache/internal/secenv"
	"github.com/convcache/convcache/internal/vfs"
)

// Limits on what a cache stores, which the file format sets.
const (
	MaxKeySize   = format.MaxKeySize   // 4 KiB: bytes in a key
	MaxValueSize = format.MaxValueSize // 1 MiB: bytes in a value
	MaxScopeSize = format.MaxScopeSize // 4 KiB: bytes in a scope name

	// FormatVersion is the newest file format this package reads and the
	// one it writes.
	FormatVersion = format.Version
)

// Defaults for the zero values of Options.
const (
	DefaultScope        = "default"
	DefaultLockTimeout  = 5 * time.Second
	DefaultBuildTimeout = 60 * time.Second
	// DefaultCompactJournal is the journal size above which an insert or
	// save compacts, once the journal is also larger than the snapshot.
	DefaultCompactJournal = 4 << 20
)

// Mode selects how a cache reads and writes.
type Mode int

const (
	// ModeReadWrite finds and inserts. It is the default.
	ModeReadWrite Mode = iota
	// ModeReadOnly finds but never writes the file. Inserts are kept in
	// memory for the life of the handle and reported with ErrReadOnly.
	ModeReadOnly
	// ModeOff disables the cache: every find misses and every insert succeeds
	// without writing. The file system is not touched.
	ModeOff
	// ModeRecache ignores hits, so callers measure again, and writes the
	// fresh results over the old ones.
	ModeRecache
	// ModeStrict treats a miss as an error (ErrMiss).
	ModeStrict
)

var modeNames = [...]string{"rw", "ro", "off", "recache", "strict"}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses a mode name as used by CONVCACHE_MODE.
func ParseMode(s string) (Mode, bool) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), true
		}
	}
	return 0, false
}

// Options configure Open. The zero value is ready to use.
type Options struct {
	// Scope names the environment the entries were measured in, such as a
	// GPU, driver and library fingerprint. Entries of one scope are never
	// returned to a handle of another. Empty means DefaultScope.
	Scope string
	// Mode is the read/write behaviour; the zero value is ModeReadWrite.
	Mode Mode
	// LockTimeout bounds each wait for the file lock (0 = DefaultLockTimeout).
	LockTimeout time.Duration
	// BuildTimeout bounds how long GetOrCreate waits for another thread or
	// process that is building the same key before building it itself
	// (0 = DefaultBuildTimeout).
	BuildTimeout time.Duration
	// MaxBytes and MaxEntries bound the file; compaction evicts the least
	// recently used entries to 90% of them. Between compactions the journal
	// may take the file past MaxEntries by up to a tenth. 0 means unbounded.
	MaxBytes   int64
	MaxEntries int64
	// CompactJournal overrides DefaultCompactJournal (bytes).
	CompactJournal int64
	// TrustShared uses a cache file (and lock file) owned by another user,
	// or writable by group or others, as the handle's own: for a cache
	// shared on purpose (CONVCACHE_TRUST_SHARED=1). New files in a directory
	// its group may write are then made 0660 in the directory's group, and
	// compaction keeps the mode and group of the file it replaces.
	//
	// Without it such a file is not used at all: Open succeeds with a
	// warning, the file is never read, every Find misses (except on entries
	// inserted through the handle), and Insert keeps entries in memory and
	// returns ErrReadOnly, as ReadOnly then reports with the reason. The
	// same holds for a symbolic link at the path that another user owns
	// (TrustShared does not lift that), and for a path that is not a
	// regular file. A lock file that may not be used makes the handle
	// read-only the same way, at once rather than after the lock timeout.
	// Files of this user or of root that group and others may not write are
	// always used.
	TrustShared bool
	// SystemPath names a read-only cache, such as one shipped in a container
	// image, asked after this handle's own file misses. Its hits are kept in
	// memory and, with Promote, also written to the handle's own file.
	SystemPath string
	Promote    bool
	// Verbose is the event log level (LogOff, LogEvents, LogAll); Log
	// receives the lines (nil means standard error).
	Verbose int
	Log     io.Writer
	// Remote is an optional tier shared across machines, asked on a local
	// miss and written behind local inserts. The Cache closes it.
	Remote Remote
	// Warn receives one-line warnings. Nil means standard error.
	Warn io.Writer
	// Memory, if set, is told about the engine's large operations, so that
	// the program that owns the process may tune its garbage collector
	// around them. The engine itself never changes a process-wide setting:
	// that is right for a Go program that imports cache and for the CLI.
	// The C library, the only Go code in its host, sets one (capi/memory.go).
	Memory MemoryPolicy

	// Publish, if set, makes the handle's index readable outside Go (the C
	// library's hit path; shared.go) and reclaims what it replaces.
	Publish Publisher

	fs vfs.FS // nil means the real file system (vfs.OS); tests inject faults
}

// MemoryPolicy is the embedding program's say over process-wide memory
// settings around the engine's large operations. Its methods may be called
// from several goroutines at once.
type MemoryPolicy interface {
	// Compacting is called as a compaction starts, and the function it
	// returns when the compaction ends. A compaction holds the old file
	// image, the merged entries and the new image at once.
	Compacting() (done func())
	// Dropped is called when the engine has let go of n bytes of file image
	// and decoded scratch that the host may want collected and returned to
	// the operating system.
	Dropped(n int64)
}

// DefaultPath returns the default cache file: $CONVCACHE_PATH, else
// $XDG_CACHE_HOME/convcache/cache.ccdb, else ~/.cache/convcache/cache.ccdb.
// In a privileged process (AT_SECURE) no variable is read, so there is no
// default: name the file.
func DefaultPath() (string, error) {
	return DefaultPathFrom(secenv.Get)
}

// DefaultPathFrom is DefaultPath reading variables through getenv.
func DefaultPathFrom(getenv func(string) string) (string, error) {
	if p := getenv("CONVCACHE_PATH"); p != "" {
		return p, nil
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "convcache", "cache.ccdb"), nil
	}
	home := getenv("HOME")
	if home == "" && secenv.Secure() {
		return "", fmt.Errorf("%w: no cache path: this program runs set-user-ID, set-group-ID or with file capabilities (AT_SECURE), so CONVCACHE_PATH, XDG_CACHE_HOME and HOME are ignored; it must name the cache file", ErrInvalid)
	}
	if home == "" {
		return "", fmt.Errorf("%w: no cache path: set CONVCACHE_PATH or HOME", ErrInvalid)
	}
	if !filepath.IsAbs(home) {
		return "", fmt.Errorf("%w: HOME=%q is not an absolute path: set CONVCACHE_PATH", ErrInvalid, home)
	}
	return filepath.Join(home, ".cache", "convcache", "cache.ccdb"), nil
}
