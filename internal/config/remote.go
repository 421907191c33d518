package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/convcache/convcache/cache"
)

// The remote tier's default and bounds. Package remote takes its own from
// these (remote.DefaultTimeout, remote.MaxTimeout).
const (
	// DefaultRemoteTimeout bounds every call that waits for Redis (a
	// lookup, a lock, a flush). A lookup in the same data centre takes well
	// under a millisecond, and a new connection (TCP, TLS, AUTH) a few;
	// 50 ms covers those with room for a busy server, yet is small beside
	// what the local miss it serves costs anyway: a cuDNN benchmark of one
	// convolution runs for tens of milliseconds to seconds. A dead server
	// costs one such deadline, after which the tier is skipped until it
	// answers again.
	DefaultRemoteTimeout = 50 * time.Millisecond
	// DefaultRemoteBuildTimeout bounds the calls made for a key that is
	// about to be built (get_or_create's remote lookup, its build lock, and
	// the lookups of a node waiting for another's build), and the
	// background writes that publish a build's value: such a miss costs a
	// benchmark of hundreds of milliseconds, so waiting longer for a busy
	// server (a training node at start-up) pays, where a plain lookup would
	// rather miss.
	DefaultRemoteBuildTimeout = time.Second
	// MaxRemoteTimeout is the largest timeout accepted.
	MaxRemoteTimeout = time.Minute
	// MaxRemoteTTL is the longest CONVCACHE_REMOTE_TTL accepted.
	MaxRemoteTTL = 10 * 365 * 24 * time.Hour
)

// Remote is the remote tier's resolved settings, as plain values: the
// callers build the tier from them (remote.OptionsFor).
type Remote struct {
	// URL is the server asked for: Request.Remote, else $CONVCACHE_REMOTE
	// without the white space around it. "" means none was.
	URL string
	// Source names where URL came from, for warnings about it:
	// "convcache_options.remote" or "CONVCACHE_REMOTE".
	Source string
	// Enabled is whether a handle uses the tier: a URL is asked for, the
	// mode is not off, and the record key asked for, if any, can be used.
	Enabled bool
	// Timeout bounds each call that waits for the server:
	// Request.RemoteTimeout, else $CONVCACHE_REMOTE_TIMEOUT_MS, else
	// DefaultRemoteTimeout.
	Timeout time.Duration
	// BuildTimeout bounds the calls for a key about to be built
	// ($CONVCACHE_REMOTE_BUILD_TIMEOUT_MS, else DefaultRemoteBuildTimeout;
	// never under Timeout).
	BuildTimeout time.Duration
	// TTL expires entries that long after their last write
	// ($CONVCACHE_REMOTE_TTL); 0 never.
	TTL time.Duration
	// MACKey is the record key ($CONVCACHE_REMOTE_KEY_FILE's, or
	// $CONVCACHE_REMOTE_KEY); nil means none. Not read with the mode off.
	MACKey []byte
	// ReadOnly: mode ro, so nothing is written to the server.
	ReadOnly bool
}

// The convcache_options fields that Request mirrors, as warnings name them.
const (
	optRemote        = "convcache_options.remote"
	optRemoteTimeout = "convcache_options.remote_timeout_ms"
)

// remote resolves the remote tier's settings for a handle in mode. They
// are resolved only when a URL is asked for; the record key only when the
// mode is not off, since reading its file is no business of a cache that
// is off.
func (v vars) remote(req Request, mode cache.Mode) Remote {
	r := Remote{Source: "CONVCACHE_REMOTE", URL: v.trimmed("CONVCACHE_REMOTE")}
	if req.Remote != nil {
		r.Source, r.URL = optRemote, *req.Remote
	}
	if r.URL == "" {
		return Remote{}
	}
	r.ReadOnly = mode == cache.ModeReadOnly
	if t := req.RemoteTimeout; t >= time.Millisecond && t <= MaxRemoteTimeout {
		r.Timeout = t
	} else if t != 0 {
		warn(optRemoteTimeout, strconv.FormatInt(t.Milliseconds(), 10),
			fmt.Sprintf("expected 1 to %d", MaxRemoteTimeout.Milliseconds()), "$CONVCACHE_REMOTE_TIMEOUT_MS or the default")
	}
	if r.Timeout == 0 {
		r.Timeout = v.Duration("CONVCACHE_REMOTE_TIMEOUT_MS", 1, MaxRemoteTimeout.Milliseconds(), DefaultRemoteTimeout)
	}
	r.BuildTimeout = max(r.Timeout,
		v.Duration("CONVCACHE_REMOTE_BUILD_TIMEOUT_MS", 1, MaxRemoteTimeout.Milliseconds(), DefaultRemoteBuildTimeout))
	r.TTL = v.RemoteTTL()
	if mode != cache.ModeOff {
		r.MACKey, r.Enabled = v.MACKey()
	}
	return r
}

// RemoteTTL parses CONVCACHE_REMOTE_TTL (parseTTL); 0, empty or unset
// means no TTL.
func (v vars) RemoteTTL() time.Duration {
	s := v.trimmed("CONVCACHE_REMOTE_TTL")
	if s == "" {
		return 0
	}
	d, ok := parseTTL(s)
	if !ok {
		warn("CONVCACHE_REMOTE_TTL", s, "expected seconds or a count with s, m, h or d (such as 30d), at most 10 years", "no TTL")
		return 0
	}
	return d
}

// parseTTL parses a time to live: a count of seconds, or a count with an
// s, m, h or d suffix (any case: 30d, 12h), from 0 to MaxRemoteTTL. ok is
// false for anything else, such as an empty value.
func parseTTL(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	unit := time.Second
	switch strings.ToLower(v[len(v)-1:]) {
	case "s":
		v = v[:len(v)-1]
	case "m":
		unit, v = time.Minute, v[:len(v)-1]
	case "h":
		unit, v = time.Hour, v[:len(v)-1]
	case "d":
		unit, v = 24*time.Hour, v[:len(v)-1]
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 || n > int64(MaxRemoteTTL/unit) {
		return 0, false
	}
	return time.Duration(n) * unit, true
}
