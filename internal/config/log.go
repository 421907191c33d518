package config

import (
	"errors"
	"io"
	"os"
	"sync"

	"github.com/convcache/convcache/internal/safefile"
)

var (
	logMu    sync.Mutex
	logFiles = map[string]io.Writer{}
)

// logFile returns the writer for CONVCACHE_LOG: the named file, opened once
// per process in append mode (so lines from many processes do not
// interleave), or standard error ("", /dev/stderr; /dev/stdout is standard
// output).
//
// The log may sit in a shared directory, so it is opened as the cache file
// is (package internal/safefile): a link is followed only if this user or
// root owns it, the file must be a regular file (or a character device,
// such as a terminal) of this user or root that group and others may not
// write, unless p trusts shared files; a new one is made 0600. Otherwise
// one warning, and standard error.
func logFile(path string, p safefile.Policy) io.Writer {
	switch path {
	case "", "/dev/stderr":
		return os.Stderr
	case "/dev/stdout":
		return os.Stdout
	}
	logMu.Lock()
	defer logMu.Unlock()
	if w, ok := logFiles[path]; ok {
		return w
	}
	real, err := safefile.Resolve(path)
	var f *os.File
	if err == nil {
		f, err = safefile.OpenFile(real, os.O_WRONLY|os.O_APPEND, true, p, true)
	}
	if err != nil {
		why := err.Error()
		var re *safefile.RefusedError
		if errors.As(err, &re) {
			why = re.Reason + "; " + re.Hint()
		}
		warn("CONVCACHE_LOG", path, why, "standard error")
		logFiles[path] = os.Stderr
		return os.Stderr
	}
	logFiles[path] = f
	return f
}
