// Package config reads convcache's environment variables into
// cache.Options. Every variable is parsed here, in one place, so that the C
// library, the interposer's library and the command-line tool agree.
//
// A value that does not parse prints one warning line (once per process per
// variable and value) and the default is used: a typo never stops a
// training job, and never silently takes effect as something else.
//
// Every variable is read through secenv: in a privileged process
// (set-user-ID, set-group-ID, file capabilities: AT_SECURE) none is, and
// the defaults apply.
package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/bytesize"
	"github.com/convcache/convcache/internal/safefile"
	"github.com/convcache/convcache/internal/secenv"
)

// Minimums that keep a bound from making the cache useless.
const (
	MinMaxBytes   = 64 << 10
	MinMaxEntries = 16
)

// LookupEnv reads one environment variable, through secenv.Lookup: every
// variable reads as unset in a privileged process (AT_SECURE), and the C
// library makes it read the live C environment (a Go runtime inside a
// shared library copies the environment when it starts, so os.LookupEnv
// would miss a setenv() the host made later). Tests replace it.
var LookupEnv = secenv.Lookup

func getenv(name string) string {
	v, _ := LookupEnv(name)
	return v
}

var (
	warnMu   sync.Mutex
	warned             = map[string]bool{}
	warnDest io.Writer = os.Stderr
)

// SetWarnOutput redirects warnings (tests).
func SetWarnOutput(w io.Writer) {
	warnMu.Lock()
	warnDest = w
	clear(warned)
	warnMu.Unlock()
}

func warn(name, value, why, def string) {
	msg := fmt.Sprintf("convcache: ignoring %s=%q: %s; using %s\n", name, value, why, def)
	warnMu.Lock()
	defer warnMu.Unlock()
	if !warned[msg] {
		warned[msg] = true
		io.WriteString(warnDest, msg)
	}
}

// Bool parses a boolean variable: 1/true/yes/on and 0/false/no/off, any
// case; unset or empty means def.
func Bool(name string, def bool) bool {
	v, ok := LookupEnv(name)
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return def
	}
	if b, ok := secenv.ParseBool(v); ok {
		return b
	}
	warn(name, v, "expected 1/0, true/false, yes/no or on/off", strconv.FormatBool(def))
	return def
}

// Int parses an integer variable within [lo, hi]; unset or empty means def.
func Int(name string, lo, hi, def int64) int64 {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		warn(name, v, fmt.Sprintf("expected an integer from %d to %d", lo, hi), strconv.FormatInt(def, 10))
		return def
	}
	return n
}

// Bytes parses a size such as 1048576, 512K, 64M or 2G (powers of 1024)
// within [lo, hi]; unset or empty means def.
func Bytes(name string, lo, hi, def int64) int64 {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def
	}
	n, ok := bytesize.Parse(v)
	if !ok || n < lo || n > hi {
		warn(name, v, fmt.Sprintf("expected a size from %d to %d bytes, such as 512M or 2G", lo, hi), strconv.FormatInt(def, 10))
		return def
	}
	return n
}

// Duration parses a millisecond count within [lo, hi] ms; unset or empty
// means def.
func Duration(name string, lo, hi int64, def time.Duration) time.Duration {
	return time.Duration(Int(name, lo, hi, int64(def/time.Millisecond))) * time.Millisecond
}

// Mode reads CONVCACHE_DISABLE and CONVCACHE_MODE. CONVCACHE_DISABLE=1
// wins; it is the same as CONVCACHE_MODE=off.
func Mode() cache.Mode {
	if Bool("CONVCACHE_DISABLE", false) {
		return cache.ModeOff
	}
	v := strings.TrimSpace(getenv("CONVCACHE_MODE"))
	if v == "" {
		return cache.ModeReadWrite
	}
	if m, ok := cache.ParseMode(strings.ToLower(v)); ok {
		return m
	}
	warn("CONVCACHE_MODE", v, "expected rw, ro, off, recache or strict", "rw")
	return cache.ModeReadWrite
}

// Options returns the options the environment asks for. Explicit settings
// by the caller (non-zero fields of o) take precedence.
func Options(o cache.Options) cache.Options {
	if o.Scope == "" {
		o.Scope = getenv("CONVCACHE_SCOPE")
		if len(o.Scope) > cache.MaxScopeSize {
			warn("CONVCACHE_SCOPE", o.Scope[:32]+"...", fmt.Sprintf("longer than %d bytes", cache.MaxScopeSize), cache.DefaultScope)
			o.Scope = ""
		}
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = Duration("CONVCACHE_LOCK_TIMEOUT_MS", 1, 3_600_000, cache.DefaultLockTimeout)
	}
	if o.BuildTimeout == 0 {
		o.BuildTimeout = Duration("CONVCACHE_BUILD_TIMEOUT_MS", 1, 86_400_000, cache.DefaultBuildTimeout)
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = Bytes("CONVCACHE_MAX_BYTES", MinMaxBytes, 1<<50, 0)
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = Int("CONVCACHE_MAX_ENTRIES", MinMaxEntries, 1<<40, 0)
	}
	if o.CompactJournal == 0 {
		o.CompactJournal = Bytes("CONVCACHE_COMPACT_JOURNAL", 4<<10, 1<<40, cache.DefaultCompactJournal)
	}
	if !o.TrustShared {
		o.TrustShared = Bool("CONVCACHE_TRUST_SHARED", false)
	}
	if o.SystemPath == "" {
		o.SystemPath = getenv("CONVCACHE_SYSTEM_PATH")
	}
	if !o.Promote {
		o.Promote = Bool("CONVCACHE_PROMOTE", false)
	}
	if o.Verbose == 0 {
		o.Verbose = int(Int("CONVCACHE_VERBOSE", 0, 2, 0))
	}
	if o.Verbose > 0 && o.Log == nil {
		o.Log = logFile(getenv("CONVCACHE_LOG"), safefile.Policy{TrustShared: o.TrustShared})
	}
	return o
}

var (
	logMu    sync.Mutex
	logFiles = map[string]io.Writer{}
)

// logFile returns the writer for CONVCACHE_LOG: the named file, opened once
// per process in append mode (so lines from many processes do not
// interleave), or standard error ("", /dev/stderr; /dev/stdout is standard
// output).
//
// The log may sit in a shared directory, so it is opened as the cache file
// is (package internal/safefile): a link is followed only if this user or
// root owns it, the file must be a regular file (or a character device,
// such as a terminal) of this user or root that group and others may not
// write, unless p trusts shared files; a new one is made 0600. Otherwise
// one warning, and standard error.
func logFile(path string, p safefile.Policy) io.Writer {
	switch path {
	case "", "/dev/stderr":
		return os.Stderr
	case "/dev/stdout":
		return os.Stdout
	}
	logMu.Lock()
	defer logMu.Unlock()
	if w, ok := logFiles[path]; ok {
		return w
	}
	real, err := safefile.Resolve(path)
	var f *os.File
	if err == nil {
		f, err = safefile.OpenFile(real, os.O_WRONLY|os.O_APPEND, true, p, true)
	}
	if err != nil {
		why := err.Error()
		var re *safefile.RefusedError
		if errors.As(err, &re) {
			why = re.Reason + "; " + re.Hint()
		}
		warn("CONVCACHE_LOG", path, why, "standard error")
		logFiles[path] = os.Stderr
		return os.Stderr
	}
	logFiles[path] = f
	return f
}

// Path returns the default cache file: $CONVCACHE_PATH, else
// $XDG_CACHE_HOME/convcache/cache.ccdb, else ~/.cache/convcache/cache.ccdb.
func Path() (string, error) {
	return cache.DefaultPathFrom(getenv)
}
