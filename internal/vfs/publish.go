package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/convcache/convcache/internal/errs"
	"github.com/convcache/convcache/internal/safefile"
)

// WriteTemp writes data to a new temporary file beside the cache file at
// path, gives it attrs (the mode and group of the file it will replace, or
// of a new file), syncs it and returns its name.
func WriteTemp(fsys FS, path string, data []byte, attrs safefile.Attrs) (string, error) {
	dir, base := filepath.Split(path)
	var name string
	var f File
	var err error
	for i := 0; i < 100; i++ {
		name = filepath.Join(dir, fmt.Sprintf(".%s.tmp-%d-%d", base, os.Getpid(), time.Now().UnixNano()+int64(i)))
		f, err = fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, attrs.Perm&0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", errs.IO(err, "create a temporary file in", dir, "make the directory writable or set CONVCACHE_PATH")
	}
	if err := attrs.Apply(f); err != nil {
		f.Close()
		fsys.Remove(name)
		return "", errs.IO(err, "set the mode and group of", name, "")
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fsys.Remove(name)
		return "", errs.IO(err, "write", name, "free some disk space")
	}
	return name, nil
}

// Replace atomically replaces path with data: a synced temporary file
// renamed over it, then the directory synced. A crash leaves the old file or
// the new one. The new file keeps the old one's mode and group, so that
// compacting a group-shared cache leaves it shared. Caller holds the file
// lock, so temporary files left by dead compactions are removed too.
func Replace(fsys FS, path string, data []byte) error {
	attrs := safefile.Private
	if fi, err := fsys.Stat(path); err == nil && fi.Mode().IsRegular() {
		attrs = safefile.AttrsOf(fi)
	}
	return ReplaceAs(fsys, path, data, attrs)
}

// ReplaceAs is Replace giving the new file attrs.
func ReplaceAs(fsys FS, path string, data []byte, attrs safefile.Attrs) error {
	tmp, err := WriteTemp(fsys, path, data, attrs)
	if err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		fsys.Remove(tmp)
		return errs.IO(err, "rename a new file over", path, "")
	}
	if err := SyncDir(fsys, filepath.Dir(path)); err != nil {
		return errs.IO(err, "sync the directory of", path, "")
	}
	dir, base := filepath.Split(path)
	stale, _ := fsys.Glob(filepath.Join(dir, "."+base+".tmp-*"))
	for _, n := range stale {
		fsys.Remove(n)
	}
	return nil
}
