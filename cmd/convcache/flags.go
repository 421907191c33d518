package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/bytesize"
)

// cachePath returns the optional PATH argument (atMostOnePath checked
// that there is at most one), or the default cache file, resolved as the
// engine resolves it.
func cachePath(args []string) (string, error) {
	p := ""
	if len(args) == 1 {
		p = args[0]
	}
	return resolve(p)
}

// resolve returns path, or the default cache file when it is empty, as the
// engine resolves it.
func resolve(path string) (string, error) {
	if path == "" {
		p, err := cache.DefaultPath()
		if err != nil {
			return "", withCode(exitUsage, "%v", err)
		}
		path = p
	}
	return cache.ResolvePath(path)
}

// durationValue is a duration flag whose error says what to give.
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return errors.New("give a duration such as 500ms, 10s or 2m")
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }
func (d *durationValue) Type() string   { return "duration" }

// lockTimeout adds --lock-timeout, whose default is
// CONVCACHE_LOCK_TIMEOUT_MS (else 5s), as the library's.
func lockTimeout(fs *pflag.FlagSet) *time.Duration {
	d := libraryConfig(false).Cache.LockTimeout
	fs.Var((*durationValue)(&d), "lock-timeout",
		"wait at most `D` for the cache lock that other processes hold, as CONVCACHE_LOCK_TIMEOUT_MS does for the library")
	return &d
}

// parseAge parses a duration such as 90m, 36h, 30d, 2w or 4d12h: Go's
// time.ParseDuration units plus d (24h) and w (7d) in front.
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("bad duration %q", s)
	var total time.Duration
	rest := s
	for rest != "" {
		n := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if n <= 0 || (rest[n] != 'd' && rest[n] != 'w') {
			break
		}
		f, err := strconv.ParseFloat(rest[:n], 64)
		if err != nil || f > 1e5 {
			return 0, bad
		}
		unit := 24 * time.Hour
		if rest[n] == 'w' {
			unit *= 7
		}
		total += time.Duration(f * float64(unit))
		rest = rest[n+1:]
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return 0, bad
		}
		total += d
	}
	if s == "" || total < 0 {
		return 0, bad
	}
	return total, nil
}

// bytesText writes n as "512 B", "1.5 KiB", "24.0 MiB".
func bytesText(n int64) string { return bytesize.Format(uint64(max(n, 0))) }

// ageText writes how long ago t was: "3s ago", "5m ago", "2h ago", "4d ago".
func ageText(now, t time.Time) string {
	if t.IsZero() || t.Unix() <= 0 {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// timeText writes t in local time to the second, with its age.
func timeText(now, t time.Time) string {
	if t.IsZero() || t.Unix() <= 0 {
		return "never"
	}
	return t.Local().Format("2006-01-02 15:04:05") + " (" + ageText(now, t) + ")"
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// plural writes "1 entry", "2 entries".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
