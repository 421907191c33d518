package config

import (
	"fmt"
	"io"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/safefile"
)

// Minimums that keep a bound from making the cache useless.
const (
	MinMaxBytes   = 64 << 10
	MinMaxEntries = 16
)

// Request is what a caller asks for: the fields of the C API's
// convcache_options, and a log. A zero field asks for the environment's
// value, else the default.
type Request struct {
	// Path is the cache file: "" means $CONVCACHE_PATH, else the default
	// (cache.DefaultPathFrom); not resolved with the mode off.
	Path string
	// Scope: "" means $CONVCACHE_SCOPE, else cache.DefaultScope.
	Scope string
	// Mode: nil means $CONVCACHE_MODE, else read-write.
	// CONVCACHE_DISABLE wins over it.
	Mode *cache.Mode
	// LockTimeout and BuildTimeout: 0 means $CONVCACHE_LOCK_TIMEOUT_MS and
	// $CONVCACHE_BUILD_TIMEOUT_MS, else the engine's defaults.
	LockTimeout, BuildTimeout time.Duration
	// MaxBytes and MaxEntries: 0 means $CONVCACHE_MAX_BYTES and
	// $CONVCACHE_MAX_ENTRIES, else unbounded.
	MaxBytes, MaxEntries int64
	// SystemPath: "" means $CONVCACHE_SYSTEM_PATH, else no system tier.
	SystemPath string
	// Remote: nil means $CONVCACHE_REMOTE; "" means no remote tier.
	Remote *string
	// RemoteTimeout: 0 means $CONVCACHE_REMOTE_TIMEOUT_MS, else
	// DefaultRemoteTimeout; a value out of 1 ms..MaxRemoteTimeout warns
	// and counts as 0.
	RemoteTimeout time.Duration
	// Log receives the verbose log: nil means $CONVCACHE_LOG (opened only
	// when CONVCACHE_VERBOSE asks for a log), else standard error.
	Log io.Writer
}

// Config is a resolved configuration: what a handle opens with.
type Config struct {
	// Path is the cache file; "" only with the mode off and none asked for.
	Path string
	// Cache is the engine's options, every field set but Remote (the
	// caller builds the tier from Remote) and Warn.
	Cache cache.Options
	// Remote is the remote tier's settings.
	Remote Remote
}

// Resolve turns a caller's request and the environment, read through
// lookup, into the configuration a handle opens with: for each setting the
// caller's value, else its variable, else the default, except that
// CONVCACHE_DISABLE wins over every mode. A variable whose value does not
// parse warns once and counts as unset.
//
// The error, which wraps cache.ErrInvalid, is about the path alone: the
// mode needs a file and none can be named (no CONVCACHE_PATH and no usable
// HOME, as in a privileged process). The rest of the configuration is
// resolved either way.
func Resolve(req Request, lookup Lookup) (Config, error) {
	v := vars{lookup}
	o := cache.Options{
		Mode:         v.Mode(req.Mode),
		Scope:        req.Scope,
		LockTimeout:  req.LockTimeout,
		BuildTimeout: req.BuildTimeout,
		MaxBytes:     req.MaxBytes,
		MaxEntries:   req.MaxEntries,
		SystemPath:   req.SystemPath,
		Log:          req.Log,
	}
	if o.Scope == "" {
		o.Scope = v.get("CONVCACHE_SCOPE")
		if len(o.Scope) > cache.MaxScopeSize {
			warn("CONVCACHE_SCOPE", o.Scope[:32]+"...", fmt.Sprintf("longer than %d bytes", cache.MaxScopeSize), cache.DefaultScope)
			o.Scope = ""
		}
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = v.Duration("CONVCACHE_LOCK_TIMEOUT_MS", 1, 3_600_000, cache.DefaultLockTimeout)
	}
	if o.BuildTimeout == 0 {
		o.BuildTimeout = v.Duration("CONVCACHE_BUILD_TIMEOUT_MS", 1, 86_400_000, cache.DefaultBuildTimeout)
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = v.Bytes("CONVCACHE_MAX_BYTES", MinMaxBytes, 1<<50, 0)
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = v.Int("CONVCACHE_MAX_ENTRIES", MinMaxEntries, 1<<40, 0)
	}
	o.CompactJournal = v.Bytes("CONVCACHE_COMPACT_JOURNAL", 4<<10, 1<<40, cache.DefaultCompactJournal)
	o.TrustShared = v.Bool("CONVCACHE_TRUST_SHARED", false)
	if o.SystemPath == "" {
		o.SystemPath = v.get("CONVCACHE_SYSTEM_PATH")
	}
	o.Promote = v.Bool("CONVCACHE_PROMOTE", false)
	o.Verbose = int(v.Int("CONVCACHE_VERBOSE", 0, 2, 0))
	if o.Verbose > 0 && o.Log == nil {
		o.Log = logFile(v.get("CONVCACHE_LOG"), safefile.Policy{TrustShared: o.TrustShared})
	}

	cfg := Config{Path: req.Path, Cache: o, Remote: v.remote(req, o.Mode)}
	if cfg.Path == "" && o.Mode != cache.ModeOff {
		p, err := cache.DefaultPathFrom(v.get)
		if err != nil {
			return cfg, err
		}
		cfg.Path = p
	}
	return cfg, nil
}
