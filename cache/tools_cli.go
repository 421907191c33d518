package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ResolvePath returns the file a cache path names, as Open resolves it: an
// absolute path with symbolic links followed, so that tools lock and replace
// the same file (and the same lock file) as the engine does. A path that
// does not exist yet is made absolute only.
func ResolvePath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%w: cache path %q: %v", ErrInvalid, path, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return "", fmt.Errorf("%w: cache path %s is a directory: name a file inside it", ErrInvalid, abs)
	}
	return abs, nil
}

// Update is Rewrite for a cache file that may not exist yet: a missing file
// is seen as empty by fn and created, with its directory (mode 0700) as Open
// creates it. It is what an import into the live cache uses.
func Update(path string, timeout time.Duration, fn func([]Entry) ([]Entry, error)) error {
	return rewrite(path, timeout, true, fn)
}
