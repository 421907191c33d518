package vfs

import (
	"cmp"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/convcache/convcache/internal/errs"
	"github.com/convcache/convcache/internal/safefile"
)

// A rewrite (compaction, or a tool's rewrite) drops the damaged records of
// the file it replaces. Their bytes are kept beside it first, for
// inspection: PATH.damaged-TIMESTAMP (UTC, to the nanosecond), a file the
// size of the old file up to the end of its last damaged range, holding
// each damaged range at its offset in the old file and a hole (zeros, no
// disk space) everywhere else. Only the newest KeepDamaged are kept.

// KeepDamaged is how many files of damaged bytes are kept beside a cache
// file: the newest; a rewrite that saves another removes the oldest.
const KeepDamaged = 3

// damagedStamp is the TIMESTAMP of PATH.damaged-TIMESTAMP: fixed width, so
// that names sort as their times do.
const damagedStamp = "20060102T150405.000000000Z"

// Piece is a byte range of a file: Bytes, read at offset Off.
type Piece struct {
	Off   int64
	Bytes []byte
}

// SaveDamaged writes pieces, the damaged ranges of the cache file at path
// that a rewrite is about to drop, to a new file beside it (see above),
// and returns its name. The file is created as the cache file's temporary
// files are: in the same directory, exclusively (never over an existing
// name or through a link), given attrs (the cache file's mode and group),
// and synced; the rename that publishes the rewrite syncs the directory.
// It then removes the oldest such files beyond KeepDamaged.
func SaveDamaged(fsys FS, path string, attrs safefile.Attrs, pieces []Piece) (string, error) {
	pieces = slices.SortedFunc(slices.Values(pieces), func(a, b Piece) int { return cmp.Compare(a.Off, b.Off) })
	var name string
	var f File
	var err error
	now := time.Now().UTC()
	for i := 0; i < 100; i++ {
		name = path + ".damaged-" + now.Add(time.Duration(i)).Format(damagedStamp)
		f, err = fsys.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL|safefile.OpenFlags, attrs.Perm&0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", errs.IO(err, "create", name, "make the directory writable or free some disk space")
	}
	if err := attrs.Apply(f); err != nil {
		f.Close()
		fsys.Remove(name)
		return "", errs.IO(err, "set the mode and group of", name, "")
	}
	var size int64
	for _, p := range pieces {
		if p.Off > size {
			// A hole up to the piece: the file is opened to append, so the
			// piece lands at its offset.
			if err = f.Truncate(p.Off); err != nil {
				break
			}
			size = p.Off
		}
		var n int
		n, err = f.Write(p.Bytes)
		size += int64(n)
		if err != nil {
			break
		}
	}
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
	old := DamagedFiles(fsys, path)
	for _, n := range old[:max(len(old)-KeepDamaged, 0)] {
		fsys.Remove(n)
	}
	return name, nil
}

// DamagedFiles returns the files of damaged bytes kept beside the cache
// file at path (SaveDamaged), oldest first.
func DamagedFiles(fsys FS, path string) []string {
	names, _ := fsys.Glob(globEscape(path) + ".damaged-*")
	prefix := path + ".damaged-"
	var out []string
	for _, n := range names {
		stamp, ok := strings.CutPrefix(n, prefix)
		if _, err := time.Parse(damagedStamp, stamp); ok && err == nil && len(stamp) == len(damagedStamp) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// globEscape quotes the characters filepath.Glob gives a meaning to.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
