package cachefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/convcache/convcache/internal/errs"
	"github.com/convcache/convcache/internal/safefile"
	"github.com/convcache/convcache/internal/secenv"
	"github.com/convcache/convcache/internal/vfs"
	"github.com/convcache/convcache/lock"
)

// ErrNoFile is what Rewrite returns when there is no cache file at path, or
// only an empty one: there is nothing to rewrite, fn is not called and no
// file is created. It is not a failure (a compactor that starts before any
// process has created the file is normal); callers test it with errors.Is.
var ErrNoFile = errors.New("convcache: no cache file yet (missing or empty): nothing to rewrite")

// Rewrite replaces the cache file at path with the entries fn returns,
// holding the file lock (waiting at most timeout) so that no process appends
// meanwhile, and publishing the new file by rename. Processes that have the
// file open pick the new one up on their next miss. fn sees every entry of
// every scope; an error from fn leaves the file unchanged. A symbolic link
// is followed as Open follows it (only one this user or root owns), and the
// file must pass Open's trust rules: a file another user owns, or that
// group or others may write, is refused with errs.ErrAccess unless
// CONVCACHE_TRUST_SHARED=1 is set (read here, as DefaultPath reads its
// variables). The new file keeps the old one's mode and group. A missing
// or empty file returns ErrNoFile. The damaged records of the old file
// (File.Corrupt, a torn tail apart) are kept beside it first, in
// PATH.damaged-TIMESTAMP (vfs.SaveDamaged: the newest vfs.KeepDamaged such
// files are kept; DamagedFiles lists them); if they cannot be, the file is
// not rewritten.
func Rewrite(path string, timeout time.Duration, fn func([]Entry) ([]Entry, error)) error {
	if noFile(path) {
		return ErrNoFile // before taking the lock: not even a lock file is created
	}
	return rewrite(path, timeout, false, fn)
}

// toolPolicy is what the tools trust: CONVCACHE_TRUST_SHARED, as the
// library reads it.
func toolPolicy() safefile.Policy {
	trust, _ := secenv.ParseBool(secenv.Get("CONVCACHE_TRUST_SHARED"))
	return safefile.Policy{TrustShared: trust}
}

// noFile reports whether path names no file, or an empty one. It opens
// nothing: the trust rules apply when rewrite opens the file.
func noFile(path string) bool {
	fi, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode().IsRegular() && fi.Size() == 0
}

// lockTimeout is Rewrite's wait for the lock when the caller gives none: the
// library's default (cache.DefaultLockTimeout).
const lockTimeout = 5 * time.Second

func rewrite(path string, timeout time.Duration, create bool, fn func([]Entry) ([]Entry, error)) error {
	path, err := ResolvePath(path)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		timeout = lockTimeout
	}
	if create {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return errs.IO(err, "create the cache directory", filepath.Dir(path), "set CONVCACHE_PATH to a writable location")
		}
	}
	pol := toolPolicy()
	lf := lock.New(path + ".lock")
	if pol.TrustShared {
		lf = lock.NewShared(path + ".lock")
	}
	lk, err := lf.Lock(timeout)
	if err != nil {
		if errors.Is(err, lock.ErrTimeout) {
			return fmt.Errorf("%w: %s is held by another process; try again or raise the timeout", errs.ErrLock, path+".lock")
		}
		if errors.Is(err, lock.ErrRefused) {
			return refusal(err, "the cache was not rewritten")
		}
		return errs.IO(err, "lock", path+".lock", "check the directory's permissions")
	}
	defer lk.Unlock()
	if !create && noFile(path) {
		return ErrNoFile // removed while this call waited for the lock
	}
	var in []Entry
	var damaged []vfs.Piece
	attrs := safefile.NewFileAttrs(filepath.Dir(path), pol)
	f, err := safefile.OpenFile(path, os.O_RDONLY, false, pol, false)
	switch {
	case err == nil:
		var data []byte
		fi, serr := f.Stat()
		if data, err = readAll(f); err == nil && serr == nil {
			attrs = safefile.AttrsOf(fi)
		}
		f.Close()
		if err != nil {
			return errs.IO(err, "read", path, "")
		}
		cf, err := parseFile(path, data)
		if err != nil {
			return err
		}
		in = cf.Entries()
		for _, d := range cf.Corrupt() {
			damaged = append(damaged, vfs.Piece{Off: d.Offset, Bytes: data[d.Offset : d.Offset+d.Length]})
		}
	case errors.Is(err, safefile.ErrRefused):
		return refusal(err, "not rewritten")
	case errors.Is(err, fs.ErrNotExist) && create:
	default:
		return errs.IO(err, "read", path, "check the path (convcache stats shows the default)")
	}
	out, err := fn(in)
	if err != nil {
		return err
	}
	if len(damaged) > 0 {
		// Damage is dropped only once it is kept beside the file.
		if _, err := vfs.SaveDamaged(vfs.OS{}, path, attrs, damaged); err != nil {
			return fmt.Errorf("%w; the cache was not rewritten", err)
		}
	}
	return vfs.ReplaceAs(vfs.OS{}, path, EncodeFile(out, time.Now()), attrs)
}

// WriteNew writes a new cache file (mode 0600) holding entries at path,
// which must not exist (an export bundle, a merge result). It never
// replaces what is there, a link included, even one that appears while it
// writes.
func WriteNew(path string, entries []Entry) error {
	exists := func() error {
		return fmt.Errorf("%w: %s already exists; remove it or choose another name", errs.ErrInvalid, path)
	}
	if _, err := os.Lstat(path); err == nil {
		return exists()
	}
	tmp, err := vfs.WriteTemp(vfs.OS{}, path, EncodeFile(entries, time.Now()), safefile.Private)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil { // link, unlike rename, never replaces
		if errors.Is(err, fs.ErrExist) {
			return exists()
		}
		return errs.IO(err, "create", path, "check the directory's permissions")
	}
	if err := vfs.SyncDir(vfs.OS{}, filepath.Dir(path)); err != nil {
		return errs.IO(err, "sync the directory of", path, "")
	}
	return nil
}

// DamagedFiles returns the files of damaged records that rewrites kept
// beside the cache file at path, oldest first (see Rewrite).
func DamagedFiles(path string) []string { return vfs.DamagedFiles(vfs.OS{}, path) }

// Update is Rewrite for a cache file that may not exist yet: a missing file
// is seen as empty by fn and created, with its directory (mode 0700) as Open
// creates it. It is what an import into the live cache uses.
func Update(path string, timeout time.Duration, fn func([]Entry) ([]Entry, error)) error {
	return rewrite(path, timeout, true, fn)
}
