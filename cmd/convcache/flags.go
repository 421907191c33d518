package main

import (
	"github.com/convcache/convcache/cudnn"

	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/config"
)

// newFlags returns a flag set for a subcommand whose usage line is
// "convcache NAME ARGS".
func newFlags(e *env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	for _, c := range commands {
		if c.name == name {
			fs.Usage = func() {
				fmt.Fprintf(e.stderr, "usage: convcache %s %s\n  %s\n", name, c.args, c.summary)
				fs.PrintDefaults()
			}
		}
	}
	return fs
}

// parse parses args, allowing flags before and after the positional
// arguments (convcache stats PATH --json); everything after "--" is
// positional. It returns the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, err
			}
			return nil, quietErr{exitUsage} // the flag package printed why, and the usage
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return append(pos, tail...), nil
}

// cachePath returns the one optional PATH argument, or the default cache
// file, resolved as the engine resolves it.
func cachePath(fs *flag.FlagSet, pos []string) (string, error) {
	if len(pos) > 1 {
		return "", usageErr("too many arguments %q: give at most one cache file (see convcache %s -h)", pos, fs.Name())
	}
	p := ""
	if len(pos) == 1 {
		p = pos[0]
	}
	return resolve(p)
}

// resolve returns path, or the default cache file when it is empty, as the
// engine resolves it.
func resolve(path string) (string, error) {
	if path == "" {
		p, err := config.Path()
		if err != nil {
			return "", withCode(exitUsage, "%v", err)
		}
		path = p
	}
	return cache.ResolvePath(path)
}

// strList is a repeatable string flag.
type strList []string

func (l *strList) String() string     { return strings.Join(*l, ",") }
func (l *strList) Set(v string) error { *l = append(*l, v); return nil }

// lockTimeout adds --lock-timeout, defaulting to CONVCACHE_LOCK_TIMEOUT_MS.
func lockTimeout(fs *flag.FlagSet) *time.Duration {
	d := fs.Duration("lock-timeout", envOptions().LockTimeout,
		"longest wait for the cache lock held by other processes (default $CONVCACHE_LOCK_TIMEOUT_MS or 5s)")
	return d
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
func bytesText(n int64) string { return cudnn.FormatBytes(uint64(max(n, 0))) }

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

// envOptions returns the cache options the environment sets, as a library
// handle would see them. Log is set so that CONVCACHE_LOG is not opened.
func envOptions() cache.Options {
	return config.Options(cache.Options{Log: io.Discard})
}
