package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
	// MaxTimeout is the largest Timeout accepted.
	MaxTimeout = config.MaxRemoteTimeout
)

// Sizes of one pipelined write batch.
const (
	batchOps   = 256
	batchBytes = 1 << 20
)

// Options configure a Client. Only URL is required.
type Options struct {
	// URL is redis://[user:pass@]host[:port][/db] or rediss://... for TLS.
	URL string
	// Timeout bounds each call that waits for Redis (0 = DefaultTimeout).
	Timeout time.Duration
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
// describes (config.Resolve): its URL, timeout, TTL, record key and
// read-only mode; every other field is left to its default.
func OptionsFor(s config.Remote) Options {
	return Options{URL: s.URL, Timeout: s.Timeout, TTL: s.TTL, MACKey: s.MACKey, ReadOnly: s.ReadOnly}
}

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

	down   atomic.Bool // a call failed; skip the server until a probe answers
	warned atomic.Bool
	q      *queue
	tokens atomic.Uint64

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

	// Every wait is bounded by one context deadline of opts.Timeout: no
	// retries (they would multiply it), one dial attempt, and socket and
	// pool timeouts no longer than the deadline itself.
	ro.MaxRetries = -1
	ro.DialerRetries = 1
	ro.DialTimeout = opts.Timeout
	ro.ReadTimeout = opts.Timeout
	ro.WriteTimeout = opts.Timeout
	ro.PoolTimeout = opts.Timeout
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

// Get returns the value stored for (scope, key). A miss, an error, a value
// that fails its checks, or a server marked down all return false; no call
// waits longer than the timeout.
func (r *Client) Get(scope string, key []byte) ([]byte, bool) {
	if len(scope) > cache.MaxScopeSize || len(key) > cache.MaxKeySize || r.down.Load() {
		return nil, false
	}
	c := r.conn()
	if c == nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
	defer cancel()
	// GETRANGE rather than GET bounds what a foreign, huge value costs: at
	// most maxRecord+1 bytes are read. A missing key reads as "".
	rec, err := c.GetRange(ctx, entryKey(r.opts.Prefix, scope, key), 0, int64(r.maxRecord)).Bytes()
	switch {
	case err != nil && redis.HasErrorPrefix(err, "WRONGTYPE"):
		r.rejected.Add(1) // not a string: something else wrote that key
		return nil, false
	case err != nil:
		r.fail(err)
		return nil, false
	case len(rec) == 0:
		r.misses.Add(1)
		return nil, false
	case len(rec) > r.maxRecord:
		r.rejected.Add(1)
		return nil, false
	}
	v, _, err := parseRecord(rec, scope, key, r.opts.MaxValue, r.mac)
	if err != nil {
		r.rejected.Add(1)
		return nil, false
	}
	r.hits.Add(1)
	return v, true
}

// Put queues (scope, key, value) to be written in the background. It copies
// its arguments and never blocks: when the queue is full the oldest entry is
// dropped and counted.
func (r *Client) Put(scope string, key, value []byte) {
	if r.opts.ReadOnly {
		return
	}
	if len(scope) > cache.MaxScopeSize || len(key) == 0 || len(key) > cache.MaxKeySize || len(value) > r.opts.MaxValue {
		r.dropped.Add(1)
		return
	}
	if r.conn() == nil {
		r.dropped.Add(1)
		return
	}
	rec := appendRecord(make([]byte, 0, recordSize(scope, key, value, r.mac != nil)), scope, key, value, time.Now().UnixMilli(), r.mac)
	if n := r.q.push(op{kind: opSet, key: entryKey(r.opts.Prefix, scope, key), rec: rec}); n > 0 {
		r.dropped.Add(uint64(n))
	}
}

// Scripts run by Redis on a lock key: delete or renew it only while it
// holds our token, so that a holder whose lock expired and went to another
// node never frees or extends that node's lock.
const (
	unlockScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`
	renewScript  = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`
)

func noop() {}

// TryLock takes the cluster build lock of (scope, key) with SET NX PX. It
// returns false while another node holds it. When the server is down, slow
// or read-only mode is on, it grants the lock without holding anything.
//
// While held, the lock is renewed every third of its TTL. unlock stops the
// renewal and queues the release behind the writes already queued, so that
// a node that takes the lock next finds the value this one just put.
func (r *Client) TryLock(scope string, key []byte) (unlock func(), ok bool) {
	if r.opts.ReadOnly || len(scope) > cache.MaxScopeSize || len(key) > cache.MaxKeySize || r.down.Load() {
		return noop, true
	}
	c := r.conn()
	if c == nil {
		return noop, true
	}
	lk := lockKey(r.opts.Prefix, scope, key)
	token := r.newToken()
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
	err := c.Do(ctx, "SET", lk, token, "NX", "PX", r.opts.LockTTL.Milliseconds()).Err()
	cancel()
	if errors.Is(err, redis.Nil) {
		return nil, false // held by another node
	}
	if err != nil {
		r.fail(err)
		return noop, true
	}
	stop := make(chan struct{})
	go r.renew(c, lk, token, stop)
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			if !r.closed.Load() {
				r.q.push(op{kind: opUnlock, key: lk, rec: []byte(token)})
			}
		})
	}, true
}

func (r *Client) newToken() string {
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", r.tokenBase, r.tokens.Add(1), hex.EncodeToString(b[:]))
}

// renew extends a held lock until stop is closed or the client closes.
func (r *Client) renew(c *redis.Client, lk, token string, stop <-chan struct{}) {
	defer r.recoverGoroutine("lock renewal", false)
	t := time.NewTicker(r.opts.LockTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-r.ctx.Done():
			return
		case <-t.C:
			callHook(&testHookRenew)
			ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
			c.Eval(ctx, renewScript, []string{lk}, token, r.opts.LockTTL.Milliseconds())
			cancel()
		}
	}
}

// Flush waits until the writes queued before the call are sent, at most the
// timeout. It returns nil even when they are not: the tier fails open, and
// its warning and counters report trouble. It returns at once while the
// server is marked down.
func (r *Client) Flush() error {
	if r.closed.Load() || r.rdb.Load() == nil {
		return nil
	}
	r.flushUntil(time.Now().Add(r.opts.Timeout))
	return nil
}

func (r *Client) flushUntil(deadline time.Time) {
	mark := r.q.mark()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		done, progress := r.q.finished(mark)
		if done || r.down.Load() {
			return
		}
		select {
		case <-progress:
		case <-t.C:
			return
		}
	}
}

// Close flushes for at most the timeout, stops the writer and closes the
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
	deadline := time.Now().Add(r.opts.Timeout)
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
