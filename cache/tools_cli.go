package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/convcache/convcache/lock"
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
// creates it. It is what an import into the live cache uses. The path should
// come from ResolvePath.
func Update(path string, timeout time.Duration, fn func([]Entry) ([]Entry, error)) error {
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return ioErr(err, "create the cache directory", filepath.Dir(path), "set CONVCACHE_PATH to a writable location")
	}
	lk, err := lock.New(path + ".lock").Lock(timeout)
	if err != nil {
		if errors.Is(err, lock.ErrTimeout) {
			return fmt.Errorf("%w: %s is held by another process; try again or raise the timeout", ErrLock, path+".lock")
		}
		return ioErr(err, "lock", path+".lock", "check the directory's permissions")
	}
	defer lk.Unlock()
	var in []Entry
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		f, err := ReadFile(path)
		if err != nil {
			return err
		}
		in = f.Entries()
	}
	out, err := fn(in)
	if err != nil {
		return err
	}
	return replaceFile(osFS{}, path, EncodeFile(out, time.Now()))
}
