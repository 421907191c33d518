package config

import (
	"net/url"
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

// RemoteMACKey returns the record MAC key for the remote tier: the key in
// the file that CONVCACHE_REMOTE_KEY_FILE names (read as
// remote.ReadMACKeyFile reads it), or CONVCACHE_REMOTE_KEY itself, without
// white space at its end. Neither set: nil and true. A key asked for that
// cannot be used (both variables set, a file refused, a key out of bounds)
// prints one warning, which never shows the key, and returns false: the
// caller must then go without the tier, since a tier without the key would
// trust the records the key was meant to check.
func RemoteMACKey() ([]byte, bool) {
	path := strings.TrimSpace(getenv("CONVCACHE_REMOTE_KEY_FILE"))
	inline := strings.TrimRight(getenv("CONVCACHE_REMOTE_KEY"), " \t\r\n")
	const def = "the local cache only"
	switch {
	case path != "" && inline != "":
		warn("CONVCACHE_REMOTE_KEY", "(hidden)", "CONVCACHE_REMOTE_KEY_FILE is set too; set one of them", def)
		return nil, false
	case path != "":
		key, err := remote.ReadMACKeyFile(path)
		if err != nil {
			warn("CONVCACHE_REMOTE_KEY_FILE", path, strings.TrimPrefix(err.Error(), "remote: "), def)
			return nil, false
		}
		return key, true
	case inline != "":
		if err := remote.CheckMACKey([]byte(inline)); err != nil {
			warn("CONVCACHE_REMOTE_KEY", "(hidden)", strings.TrimPrefix(err.Error(), "remote: "), def)
			return nil, false
		}
		return []byte(inline), true
	}
	return nil, true
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
	warn(name, redactURL(value), strings.TrimPrefix(err.Error(), "remote: "), "the local cache only")
}

// WarnOption prints one warning for a nonsense option value, in the same
// form as for an environment variable.
func WarnOption(name, value, why, def string) {
	warn(name, value, why, def)
}

// redactURL masks a password in value, which may not be a valid URL.
func redactURL(v string) string {
	if u, err := url.Parse(v); err == nil {
		return u.Redacted()
	}
	if i, j := strings.Index(v, "://"), strings.LastIndex(v, "@"); i >= 0 && j > i {
		return v[:i+3] + "xxxxx" + v[j:]
	}
	return v
}
