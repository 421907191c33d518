// Package config reads convcache's environment variables into
// cache.Options. Every variable is parsed here, in one place, so that the C
// library, the interposer's library and the command-line tool agree.
//
// A value that does not parse prints one warning line (once per process per
// variable and value) and the default is used: a typo never stops a
// training job, and never silently takes effect as something else.
package config

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/convcache/convcache/cache"
)

// Minimums that keep a bound from making the cache useless.
const (
	MinMaxBytes   = 64 << 10
	MinMaxEntries = 16
)

// LookupEnv reads one environment variable. The C library replaces it with
// one that calls the C library's getenv: a Go runtime inside a shared
// library copies the environment when it starts, so os.LookupEnv would miss
// a setenv() the host made later.
var LookupEnv = os.LookupEnv

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
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on", "y":
		return true
	case "0", "false", "no", "off", "n":
		return false
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
	n, ok := ParseBytes(v)
	if !ok || n < lo || n > hi {
		warn(name, v, fmt.Sprintf("expected a size from %d to %d bytes, such as 512M or 2G", lo, hi), strconv.FormatInt(def, 10))
		return def
	}
	return n
}

// ParseBytes parses a byte count with an optional K, M, G or T suffix
// (optionally followed by B or iB), in powers of 1024.
func ParseBytes(v string) (int64, bool) {
	s := strings.ToUpper(strings.TrimSpace(v))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "IB"), "B")
	mult := int64(1)
	if len(s) > 0 {
		switch s[len(s)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, false
	}
	return n * mult, true
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
		o.Log = logFile(getenv("CONVCACHE_LOG"))
	}
	return o
}

var (
	logMu    sync.Mutex
	logFiles = map[string]io.Writer{}
)

// logFile returns the writer for CONVCACHE_LOG: the named file, opened once
// per process in append mode (so lines from many processes do not
// interleave), or standard error.
func logFile(path string) io.Writer {
	if path == "" {
		return os.Stderr
	}
	logMu.Lock()
	defer logMu.Unlock()
	if w, ok := logFiles[path]; ok {
		return w
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		warn("CONVCACHE_LOG", path, err.Error(), "standard error")
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
