package config

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
)

var (
	warnMu   sync.Mutex
	warned             = map[string]bool{}
	warnDest io.Writer = os.Stderr
)

// SetWarnOutput redirects warnings, and forgets which were printed (tests).
func SetWarnOutput(w io.Writer) {
	warnMu.Lock()
	warnDest = w
	clear(warned)
	warnMu.Unlock()
}

// warn prints one warning for a setting that cannot be used: name=value,
// why, and what is used instead (def). Each is printed once per process.
func warn(name, value, why, def string) {
	msg := fmt.Sprintf("convcache: ignoring %s=%q: %s; using %s\n", name, value, why, def)
	warnMu.Lock()
	defer warnMu.Unlock()
	if !warned[msg] {
		warned[msg] = true
		io.WriteString(warnDest, msg)
	}
}

// WarnRemote prints the one warning for a remote tier that cannot be used
// (a bad URL, a bad option): the cache goes on with its local file only.
// name is where the value came from (Remote.Source).
func WarnRemote(name, value string, err error) {
	warn(name, redactURL(value), strings.TrimPrefix(err.Error(), "remote: "), "the local cache only")
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
