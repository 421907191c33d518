package remote

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/config"
)

// Client is a cache.Remote backed by one Redis server. It is safe for
// concurrent use. It connects on first use, not in New.
type Client struct {
	opts      Options
	ropts     *redis.Options
	display   string  // the URL without its password
	maxRecord int     // largest record accepted, for the longest scope and key
	mac       *macKey // nil: records are written without a MAC, read unauthenticated
	tokenBase string  // host:pid: names this process in lock tokens

	mu      sync.Mutex // guards starting and closing
	rdb     atomic.Pointer[redis.Client]
	closed  atomic.Bool
	dead    atomic.Bool     // the writer loop panicked: the tier is off
	ctx     context.Context // canceled by Close
	cancel  context.CancelFunc
	looping chan struct{} // closed when the writer loop returns

	// The server's health (health.go): down, a call failed, so plain calls
	// skip it until a probe answers; unreachable, it did not answer even
	// within BuildTimeout, or refused the connection, so every call skips it.
	down        atomic.Bool
	unreachable atomic.Bool
	warned      atomic.Bool
	q           *queue
	tokens      atomic.Uint64

	hits, misses, errs, rejected, writes, dropped atomic.Uint64
}

var _ cache.Remote = (*Client)(nil)

// New returns a Client for opts.URL. It checks the URL and options and
// returns ErrURL or ErrOptions; it does not connect.
func New(opts Options) (*Client, error) {
	ro, display, err := parseURL(opts.URL)
	if err != nil {
		return nil, err
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.BuildTimeout == 0 {
		opts.BuildTimeout = DefaultBuildTimeout
	}
	if opts.LockTTL == 0 {
		opts.LockTTL = DefaultLockTTL
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.MaxValue == 0 {
		opts.MaxValue = cache.MaxValueSize
	}
	if opts.QueueEntries == 0 {
		opts.QueueEntries = DefaultQueueEntries
	}
	if opts.QueueBytes == 0 {
		opts.QueueBytes = DefaultQueueBytes
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	switch {
	case opts.Timeout < time.Millisecond || opts.Timeout > MaxTimeout:
		return nil, fmt.Errorf("%w: timeout %v is not within 1ms..%v", ErrOptions, opts.Timeout, MaxTimeout)
	case opts.BuildTimeout < time.Millisecond || opts.BuildTimeout > MaxTimeout:
		return nil, fmt.Errorf("%w: build timeout %v is not within 1ms..%v", ErrOptions, opts.BuildTimeout, MaxTimeout)
	case opts.TTL < 0 || (opts.TTL > 0 && opts.TTL < time.Millisecond):
		return nil, fmt.Errorf("%w: TTL %v is negative or under 1ms", ErrOptions, opts.TTL)
	case opts.LockTTL < 3*time.Millisecond:
		return nil, fmt.Errorf("%w: lock TTL %v is under 3ms", ErrOptions, opts.LockTTL)
	case opts.MaxValue < 0 || opts.MaxValue > cache.MaxValueSize:
		return nil, fmt.Errorf("%w: value limit %d is not within 0..%d", ErrOptions, opts.MaxValue, cache.MaxValueSize)
	case opts.QueueEntries < 1 || opts.QueueBytes < 1:
		return nil, fmt.Errorf("%w: queue bounds must be positive", ErrOptions)
	case opts.MinBackoff < 0 || opts.MaxBackoff < opts.MinBackoff:
		return nil, fmt.Errorf("%w: backoff %v..%v", ErrOptions, opts.MinBackoff, opts.MaxBackoff)
	case strings.ContainsAny(opts.Prefix, " \r\n"):
		return nil, fmt.Errorf("%w: prefix %q contains white space", ErrOptions, opts.Prefix)
	}
	opts.BuildTimeout = max(opts.BuildTimeout, opts.Timeout)
	var mac *macKey
	if len(opts.MACKey) > 0 {
		if err := config.CheckMACKey(opts.MACKey); err != nil {
			return nil, err
		}
		mac = newMACKey(opts.MACKey)
		opts.MACKey = nil // the key lives in mac only
	}
	// A record with a MAC is accepted unauthenticated without a key, so the
	// largest record has a tag either way.
	maxRecord := headerSize + cache.MaxScopeSize + cache.MaxKeySize + opts.MaxValue + tagSize + trailerSize

	// Every wait is bounded by one context deadline, of opts.Timeout or
	// opts.BuildTimeout: no retries (they would multiply it), one dial
	// attempt, and socket and pool timeouts no longer than the longer
	// deadline (the context's, when shorter, wins: ContextTimeoutEnabled).
	ro.MaxRetries = -1
	ro.DialerRetries = 1
	ro.DialTimeout = opts.BuildTimeout
	ro.ReadTimeout = opts.BuildTimeout
	ro.WriteTimeout = opts.BuildTimeout
	ro.PoolTimeout = opts.BuildTimeout
	ro.ContextTimeoutEnabled = true
	if ro.PoolSize == 0 {
		ro.PoolSize = 8
	}
	// RESP2, whatever the URL says: any server and proxy speaks it, and
	// boundedConn checks its five reply types only.
	ro.Protocol = 2
	ro.Dialer = boundedDialer(redis.NewDialer(ro), replyLimitsFor(maxRecord))
	ro.DisableIdentity = true // no CLIENT SETINFO on each new connection
	ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	silenceLibraryLog()

	host, _ := os.Hostname()
	r := &Client{
		opts:      opts,
		ropts:     ro,
		display:   display,
		maxRecord: maxRecord,
		mac:       mac,
		tokenBase: fmt.Sprintf("%s:%d", host, os.Getpid()),
		looping:   make(chan struct{}),
		q:         newQueue(opts.QueueEntries, opts.QueueBytes),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r, nil
}

// parseURL checks a redis:// or rediss:// URL and returns go-redis's options
// for it and the URL with its password masked, for messages.
func parseURL(s string) (*redis.Options, string, error) {
	s = strings.TrimSpace(s)
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold a password
		}
		return nil, "", fmt.Errorf("%w: %v", ErrURL, err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, "", fmt.Errorf("%w: the scheme must be redis:// or rediss:// (TLS)", ErrURL)
	}
	if u.Hostname() == "" {
		return nil, "", fmt.Errorf("%w: no host", ErrURL)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, "", fmt.Errorf("%w: bad port %q", ErrURL, p)
		}
	}
	ro, err := redis.ParseURL(s)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrURL, strings.TrimPrefix(err.Error(), "redis: "))
	}
	return ro, u.Redacted(), nil
}

// String returns the server's URL without its password.
func (r *Client) String() string { return r.display }

// Authenticated reports whether the tier's hits are authenticated: with a
// MAC key, a hit carries a valid tag, so only a holder of the key wrote it.
// The engine writes authenticated hits to its local file and keeps others in
// memory, for this process only.
func (r *Client) Authenticated() bool { return r.mac != nil }

// conn returns the client, starting it (and the writer loop) on first use,
// or nil once closed or off.
func (r *Client) conn() *redis.Client {
	if r.closed.Load() || r.dead.Load() {
		return nil
	}
	if c := r.rdb.Load(); c != nil {
		return c
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return nil
	}
	if c := r.rdb.Load(); c != nil {
		return c
	}
	c := redis.NewClient(r.ropts)
	r.rdb.Store(c)
	go r.loop(c)
	return c
}

// Close flushes for at most the build timeout (so that the values this
// process built and the release of its locks reach a slow server), stops the writer and closes the
// connections. Writes still queued are dropped and counted. Close is
// idempotent and returns nil.
func (r *Client) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	r.mu.Lock()
	c := r.rdb.Load()
	r.mu.Unlock()
	if c == nil {
		r.cancel()
		return nil
	}
	deadline := time.Now().Add(r.opts.BuildTimeout)
	r.flushUntil(deadline)
	r.cancel()
	t := time.NewTimer(time.Until(deadline))
	select {
	case <-r.looping:
	case <-t.C:
	}
	t.Stop()
	c.Close()
	r.dropped.Add(uint64(r.q.drain()))
	return nil
}

// Stats returns the tier's counters.
func (r *Client) Stats() cache.RemoteStats {
	return cache.RemoteStats{
		Hits:     r.hits.Load(),
		Misses:   r.misses.Load(),
		Errors:   r.errs.Load(),
		Rejected: r.rejected.Load(),
		Writes:   r.writes.Load(),
		Dropped:  r.dropped.Load(),
	}
}

// Queued returns the number of writes waiting to be sent.
func (r *Client) Queued() int { return r.q.len() }

// Down reports whether the server is marked unreachable (calls skip it
// until a background probe succeeds).
func (r *Client) Down() bool { return r.down.Load() }

// quietLogger drops go-redis's own log lines: the tier prints its one
// warning itself.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...interface{}) {}

var silenceOnce sync.Once

func silenceLibraryLog() {
	silenceOnce.Do(func() { redis.SetLogger(quietLogger{}) })
}
