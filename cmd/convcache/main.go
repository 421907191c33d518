package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

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

func main() {
	os.Exit(run(os.Args[1:], &env{stdout: os.Stdout, stderr: os.Stderr}))
}

// run executes the command line args and returns the exit code. Every
// error is printed here, as one line: "convcache CMD: what went wrong; what
// to do". A bad flag or argument also prints the command's usage.
func run(args []string, e *env) int {
	root := newRoot(e)
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	if cmd == nil {
		cmd = root
	}
	var q quietErr
	if !errors.As(err, &q) {
		fmt.Fprintf(e.stderr, "%s: %s\n", cmd.CommandPath(), message(err))
	}
	var a *argError
	if errors.As(err, &a) {
		printUsage(e.stderr, a.cmd)
	}
	return exitCode(err)
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

// argError is a bad flag or argument: it exits with exitUsage, and the
// command's usage follows its line.
type argError struct {
	cmd *cobra.Command
	err error
}

func (a *argError) Error() string { return a.err.Error() }
func (a *argError) Unwrap() error { return a.err }

func argErr(cmd *cobra.Command, format string, args ...any) error {
	return &argError{cmd, fmt.Errorf(format, args...)}
}

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
	var a *argError
	if errors.As(err, &a) {
		return exitUsage
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
		msg = formatMessage(err)
	case errors.Is(err, cache.ErrCorrupt):
		msg += "; the file cannot be used: move it aside (its entries will be measured again)"
	}
	return msg
}
