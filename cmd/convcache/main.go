package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/cudnn"
)

// Exit codes; doc.go documents them.
const (
	exitOK       = 0
	exitDamage   = 1 // damaged records or header found
	exitUsage    = 2 // bad command line or argument
	exitIO       = 3 // a file could not be read or written, or is not a cache file
	exitNoDevice = 4 // no device fingerprint on this machine
	exitLock     = 5 // the cache lock was not free in time
)

// env is what a subcommand runs with: its output streams.
type env struct {
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	name    string
	args    string
	summary string
	run     func(e *env, args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"stats", "[PATH] [--json]", "summarise a cache file, its tiers and its health", runStats},
		{"ls", "[PATH] [--scope S]... [--json]", "list entries, decoded where the layout is known", runLs},
		{"dump", "[PATH] [--scope S]... [--json]", "list entries in full detail, with hex", runDump},
		{"verify", "[PATH] [--json] [--strict]", "check every record; exit 1 on damage", runVerify},
		{"compact", "[PATH] [--lock-timeout D]", "rewrite the file as a snapshot under the lock", runCompact},
		{"prune", "[PATH] [--scope S]... [--keep-scope S]... [--older-than D] [--max-bytes N] [--dry-run]", "remove entries", runPrune},
		{"merge", "A B... -o OUT", "combine cache files into a new one", runMerge},
		{"export", "[PATH] [--scope S]... -o FILE", "write a portable bundle of some scopes", runExport},
		{"import", "[--cache PATH] [--scope S]... FILE...", "merge bundles into the live cache", runImport},
		{"scope", "[--device N] [--json]", "print this machine's fingerprint for each device", runScope},
	}
}

func main() {
	os.Exit(run(os.Args[1:], &env{stdout: os.Stdout, stderr: os.Stderr}))
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: convcache COMMAND [ARGS]\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nPATH defaults to the default cache file ($CONVCACHE_PATH, else\n"+
		"$XDG_CACHE_HOME/convcache/cache.ccdb, else ~/.cache/convcache/cache.ccdb).\n"+
		"Run convcache COMMAND -h for a command's options.\n\n"+
		"exit codes: 0 ok, 1 damage found, 2 usage, 3 I/O or format error,\n"+
		"            4 no device fingerprint, 5 cache lock busy\n")
}

func run(args []string, e *env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		usage(e.stdout)
		return exitOK
	}
	for _, c := range commands {
		if c.name != name {
			continue
		}
		err := c.run(e, args[1:])
		if err == nil {
			return exitOK
		}
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		code := exitCode(err)
		var q quietErr
		if !errors.As(err, &q) {
			fmt.Fprintf(e.stderr, "convcache %s: %s\n", name, message(err))
		}
		return code
	}
	fmt.Fprintf(e.stderr, "convcache: unknown command %q; run convcache help for the list\n", name)
	return exitUsage
}

// exitErr carries an exit code chosen by a subcommand.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string { return e.err.Error() }
func (e *exitErr) Unwrap() error { return e.err }

func withCode(code int, format string, args ...any) error {
	return &exitErr{code, fmt.Errorf(format, args...)}
}

func usageErr(format string, args ...any) error { return withCode(exitUsage, format, args...) }

// quietErr is an exit status whose report the subcommand already printed.
type quietErr struct{ code int }

func (q quietErr) Error() string { return fmt.Sprintf("exit status %d", q.code) }

func exitCode(err error) int {
	var q quietErr
	if errors.As(err, &q) {
		return q.code
	}
	var x *exitErr
	if errors.As(err, &x) {
		return x.code
	}
	switch {
	case errors.Is(err, cache.ErrLock):
		return exitLock
	case errors.Is(err, cudnn.ErrUnavailable):
		return exitNoDevice
	case errors.Is(err, cache.ErrCorrupt):
		return exitDamage
	case errors.Is(err, cache.ErrInvalid), errors.Is(err, cache.ErrSize):
		return exitUsage
	}
	return exitIO
}

// message turns an error into one line that says what to do. The cache
// package's errors already name the file; some get advice here.
func message(err error) string {
	msg := strings.TrimPrefix(err.Error(), "convcache: ")
	switch {
	case errors.Is(err, cache.ErrLock):
		msg += " (raise the wait with --lock-timeout)"
	case errors.Is(err, cache.ErrFormat):
		msg += "; check the path: it is not a convcache file, or was written by a newer convcache (upgrade this one)"
	case errors.Is(err, cache.ErrCorrupt):
		msg += "; the file cannot be used: move it aside (its entries will be measured again)"
	}
	return msg
}
