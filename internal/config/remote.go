package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/convcache/convcache/remote"
)

// Bounds of the remote tier's variables.
const (
	MaxRemoteTimeoutMs = int64(remote.MaxTimeout / time.Millisecond)
	MaxRemoteTTL       = 10 * 365 * 24 * time.Hour
)

// RemoteURL returns CONVCACHE_REMOTE, trimmed; "" means no remote tier.
func RemoteURL() string {
	return strings.TrimSpace(getenv("CONVCACHE_REMOTE"))
}

// Remote fills the zero fields of o from the environment:
// CONVCACHE_REMOTE_TIMEOUT_MS (1..60000, default remote.DefaultTimeout) and
// CONVCACHE_REMOTE_TTL. o.URL is left to the caller (see RemoteURL).
func Remote(o remote.Options) remote.Options {
	if o.Timeout == 0 {
		o.Timeout = Duration("CONVCACHE_REMOTE_TIMEOUT_MS", 1, MaxRemoteTimeoutMs, remote.DefaultTimeout)
	}
	if o.TTL == 0 {
		o.TTL = RemoteTTL()
	}
	return o
}

// RemoteTTL parses CONVCACHE_REMOTE_TTL: seconds, or a number with an s, m,
// h or d suffix (30d, 12h); 0, empty or unset means no TTL.
func RemoteTTL() time.Duration {
	v := strings.TrimSpace(getenv("CONVCACHE_REMOTE_TTL"))
	if v == "" {
		return 0
	}
	d, ok := parseTTL(v)
	if !ok {
		warn("CONVCACHE_REMOTE_TTL", v, "expected seconds or a count with s, m, h or d (such as 30d), at most 10 years", "no TTL")
		return 0
	}
	return d
}

func parseTTL(v string) (time.Duration, bool) {
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

// WarnRemote prints the one warning for a remote tier that cannot be used
// (a bad URL, a bad option): the cache goes on with its local file only.
// name is where the value came from, such as CONVCACHE_REMOTE.
func WarnRemote(name, value string, err error) {
	why := strings.TrimPrefix(err.Error(), "remote: ")
	if u, perr := redactURL(value); perr == nil {
		value = u
	} else {
		value = "(unparsable URL)"
	}
	warn(name, value, fmt.Sprint(why), "the local cache only")
}

// redactURL masks a password in value, which may not be a valid URL.
func redactURL(value string) (string, error) {
	at := strings.LastIndex(value, "@")
	scheme := strings.Index(value, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return value, nil
	}
	userinfo := value[scheme+3 : at]
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		return value[:scheme+3] + user + ":xxxxx" + value[at:], nil
	}
	return value, nil
}
