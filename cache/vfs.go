package cache

import (
	"os"
	"path/filepath"
	"syscall"
)

// fileSystem is the narrow set of file operations the engine performs. The
// real implementation is osFS; tests substitute one that injects faults
// (ENOSPC, failed syncs) at chosen points, as Pebble's vfs does.
type fileSystem interface {
	OpenFile(name string, flag int, perm os.FileMode) (file, error)
	Rename(oldpath, newpath string) error
	Link(oldpath, newpath string) error
	Remove(name string) error
	Stat(name string) (os.FileInfo, error)
	MkdirAll(path string, perm os.FileMode) error
	Glob(pattern string) ([]string, error)
}

type file interface {
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

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := os.OpenFile(name, flag|syscall.O_CLOEXEC, perm)
	if err != nil {
		return nil, err // a nil *os.File must not become a non-nil file
	}
	return f, nil
}
func (osFS) Rename(o, n string) error                     { return os.Rename(o, n) }
func (osFS) Link(o, n string) error                       { return os.Link(o, n) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) Glob(pattern string) ([]string, error)        { return filepath.Glob(pattern) }

// syncDir makes a rename or link in dir durable.
func syncDir(fs fileSystem, dir string) error {
	d, err := fs.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// fileID identifies a file independently of its path.
type fileID struct {
	dev, ino uint64
}

func idOf(fi os.FileInfo) (fileID, uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{uint64(st.Dev), st.Ino}, uint64(st.Nlink)
	}
	return fileID{}, 1
}
