package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

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
