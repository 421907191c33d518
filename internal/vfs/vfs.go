package vfs

import (
	"os"
	"path/filepath"
	"syscall"
)

// FS is the narrow set of file operations the engine performs. OS is the
// real one; tests substitute one that injects faults at chosen points.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Link(oldpath, newpath string) error
	Remove(name string) error
	Stat(name string) (os.FileInfo, error)
	MkdirAll(path string, perm os.FileMode) error
	Glob(pattern string) ([]string, error)
	// StatfsType returns the statfs magic number of the file system
	// holding dir (see TypeOf).
	StatfsType(dir string) (int64, error)
}

// File is an open file, as *os.File implements it.
type File interface {
	ReadAt(p []byte, off int64) (int, error)
	Write(p []byte) (int, error)
	Sync() error
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	Close() error
	Fd() uintptr
	Chmod(mode os.FileMode) error // a new file takes the mode and group of the one it replaces
	Chown(uid, gid int) error
}

// OS is the real file system. Every file it opens is close-on-exec.
type OS struct{}

func (OS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag|syscall.O_CLOEXEC, perm)
	if err != nil {
		return nil, err // a nil *os.File must not become a non-nil File
	}
	return f, nil
}
func (OS) Rename(o, n string) error                     { return os.Rename(o, n) }
func (OS) Link(o, n string) error                       { return os.Link(o, n) }
func (OS) Remove(name string) error                     { return os.Remove(name) }
func (OS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }
func (OS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (OS) Glob(pattern string) ([]string, error)        { return filepath.Glob(pattern) }
func (OS) StatfsType(dir string) (int64, error)         { return statfsType(dir) }

// SyncDir makes a rename or link in dir durable.
func SyncDir(fsys FS, dir string) error {
	d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// FileID identifies a file independently of its path.
type FileID struct {
	Dev, Ino uint64
}

// IDOf returns the identity of the file fi describes (zero if fi does not
// come from stat).
func IDOf(fi os.FileInfo) FileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return FileID{uint64(st.Dev), st.Ino}
	}
	return FileID{}
}
