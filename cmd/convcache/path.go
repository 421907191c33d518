package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
	"github.com/convcache/convcache/internal/format"
)

// The cache file a command works on, and the rule for one that is missing,
// written once here (doc.go documents it):
//
//   - A PATH given on the command line names a file that must exist. One
//     that does not is an error, exit 3, "PATH does not exist: check the
//     path", for every command: a mistyped path never reads as an empty
//     cache.
//   - The default cache file ($CONVCACHE_PATH, else the XDG path) may not
//     exist yet: that is every machine's state until a program first uses
//     the cache. stats, ls, dump, verify and compact say notCreatedYet
//     (nothing cached yet) and exit 0, so that a CI step
//     `convcache verify || fail` passes on a fresh machine. prune and
//     export need a file's contents: they exit 3, saying it has not been
//     created yet.
//
// Inputs that are not the cache (merge's and import's files) are named on
// the command line, so they must exist too. import --cache names the cache
// to import into, which import creates when missing, as documented; run's
// and doctor's --path name the file a program will use, which it creates.

// notCreatedYet follows the default cache file's path when it does not
// exist yet, in every command that reads it (stats, ls, dump, verify,
// compact).
const (
	nothingCachedYet = "nothing cached yet"
	notCreatedYet    = "has not been created yet: " + nothingCachedYet
)

// cachePath returns the optional PATH argument (atMostOnePath checked
// that there is at most one), which must exist, or the default cache file,
// which may not. Either is resolved as the engine resolves it.
func cachePath(args []string) (string, error) {
	if len(args) == 0 {
		return resolve("")
	}
	p, err := resolve(args[0])
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return "", missingFile(p)
	}
	return p, nil
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
	return cachefile.ResolvePath(path)
}

// isDefault reports whether path is the default cache file.
func isDefault(path string) bool {
	d, err := resolve("")
	return err == nil && d == path
}

// missingFile is the error for a file that does not exist, by the rule
// above: the default cache file has not been created yet; any other file
// is a path to check.
func missingFile(path string) error {
	if isDefault(path) {
		return withCode(exitIO, "%s has not been created yet: it is the default cache file, made by the first program that uses the cache (name another file as PATH or with CONVCACHE_PATH)", path)
	}
	return withCode(exitIO, "%s does not exist: check the path (without one, convcache uses the default cache file; convcache stats shows it)", path)
}

// formatMessage says why a file's header was refused (cache.ErrFormat),
// once: a file with another magic number, or none, is not a convcache file
// (check the path); only a convcache file of a newer format version asks
// for an upgrade. The cache package's error reads "PATH: " and the reason;
// one of another shape keeps its words, with the advice for both causes.
func formatMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "convcache: ")
	for _, c := range []struct {
		reason error
		says   string
	}{
		{format.ErrForeign, " is not a convcache file (unknown magic number): check the path"},
		{format.ErrEmpty, " is empty, not a convcache file: check the path"},
		{format.ErrNewer, fmt.Sprintf(" was written by a newer convcache, in a file format this one does not read (it reads format %d): upgrade convcache", format.Version)},
	} {
		if !errors.Is(err, c.reason) {
			continue
		}
		if path, ok := strings.CutSuffix(msg, ": "+c.reason.Error()); ok && path != "" {
			return path + c.says
		}
		if c.reason == format.ErrNewer {
			return msg + "; upgrade convcache"
		}
		return msg + "; check the path"
	}
	return msg + "; check the path: it is not a convcache file, or was written by a newer convcache (upgrade this one)"
}
