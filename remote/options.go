package remote

import (
	"io"
	"time"

	"github.com/convcache/convcache/internal/config"
)

// Defaults for the zero values of Options.
const (
	// DefaultTimeout bounds every call that waits for Redis (a lookup, a
	// lock, a flush): 50 ms (config.DefaultRemoteTimeout says why).
	DefaultTimeout = config.DefaultRemoteTimeout
	// DefaultLockTTL is the life of a cluster build lock. The holder renews
	// it every third of that while it builds, so a build may take longer;
	// a holder that dies frees the key within DefaultLockTTL.
	DefaultLockTTL = 10 * time.Second
	// DefaultPrefix begins every Redis key the tier writes.
	DefaultPrefix = "convcache"
	// DefaultQueueEntries and DefaultQueueBytes bound the write-behind queue.
	DefaultQueueEntries = 4096
	DefaultQueueBytes   = 64 << 20
	// DefaultMinBackoff and DefaultMaxBackoff bound the wait between
	// reconnection attempts while the server is down.
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
	// DefaultBuildTimeout bounds the calls for a key about to be built
	// (GetBuild, TryLockBuild) and the background writes: 1 s
	// (config.DefaultRemoteBuildTimeout says why).
	DefaultBuildTimeout = config.DefaultRemoteBuildTimeout
	// MaxTimeout is the largest Timeout accepted.
	MaxTimeout = config.MaxRemoteTimeout
)

// Options configure a Client. Only URL is required.
type Options struct {
	// URL is redis://[user:pass@]host[:port][/db] or rediss://... for TLS.
	URL string
	// Timeout bounds each plain lookup (Get), the lock of a caller that
	// does not build (TryLock) and Flush (0 = DefaultTimeout).
	Timeout time.Duration
	// BuildTimeout bounds each call for a key about to be built (GetBuild,
	// TryLockBuild), the background writes, lock renewals, the probes of a
	// server marked down and Close's flush (0 = DefaultBuildTimeout; raised
	// to Timeout when under it).
	BuildTimeout time.Duration
	// TTL, if positive, expires each entry that long after it was last
	// written. 0 keeps entries until Redis evicts them.
	TTL time.Duration
	// LockTTL is the life of a cluster build lock (0 = DefaultLockTTL).
	LockTTL time.Duration
	// Prefix begins every key (empty = DefaultPrefix).
	Prefix string
	// MaxValue is the largest value stored or accepted, in bytes
	// (0 = cache.MaxValueSize).
	MaxValue int
	// QueueEntries and QueueBytes bound the write-behind queue
	// (0 = DefaultQueueEntries, DefaultQueueBytes).
	QueueEntries int
	QueueBytes   int64
	// MinBackoff and MaxBackoff bound the wait between reconnection attempts
	// (0 = DefaultMinBackoff, DefaultMaxBackoff).
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// ReadOnly never writes to Redis: Put is ignored and TryLock grants
	// every lock without asking (mode ro).
	ReadOnly bool
	// Warn receives the tier's one warning line. Nil means standard error,
	// and then the warning is printed once per process and server.
	Warn io.Writer
	// MACKey, if set, authenticates records: every record written carries
	// an HMAC-SHA256 tag under it, and a record read without a valid tag is
	// rejected. Only authenticated hits are written to the local file (see
	// Authenticated). MinMACKeySize to MaxMACKeySize bytes; New copies it.
	// Empty means no key.
	MACKey []byte
}

// OptionsFor returns the Options of the tier that a resolved configuration
// describes (config.Resolve): its URL, timeouts, TTL, record key and
// read-only mode; every other field is left to its default.
func OptionsFor(s config.Remote) Options {
	return Options{URL: s.URL, Timeout: s.Timeout, BuildTimeout: s.BuildTimeout, TTL: s.TTL, MACKey: s.MACKey, ReadOnly: s.ReadOnly}
}
