package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/convcache/convcache/cache"
)

// Whether a program could use a cache file: the rule convcache run applies
// to --path before it starts the program, and convcache doctor reports as
// a finding. The interposer fails open on a path it cannot use, with one
// warning at the program's first cuDNN call, deep in its output; these
// checks say it up front.

// unusableCache returns why the cache file at path (given or the default,
// not resolved yet) cannot be used in mode, or nil: the engine refuses the
// path (a directory, a file that is not a regular file, a path the trust
// rules refuse), it does not exist and cannot be created (its nearest
// existing ancestor is not a directory, or not writable by you), or it
// exists and is not writable by you. The last two are no reason in modes
// that store nothing (ro, off). It returns the path as the engine resolves
// it when it can.
func unusableCache(path string, mode cache.Mode) (string, error) {
	p, err := resolve(path)
	if err != nil {
		return path, errors.New(message(err))
	}
	if mode == cache.ModeReadOnly || mode == cache.ModeOff {
		return p, nil
	}
	_, err = os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR):
		dir := existingParent(filepath.Dir(p))
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return p, fmt.Errorf("cache file %s cannot be created: %s is not a directory: name a file in a directory you can write", p, dir)
		}
		if unix.Access(dir, unix.W_OK) != nil {
			return p, fmt.Errorf("cache file %s cannot be created: %s is not writable by you: name a file in a directory you can write", p, dir)
		}
	case err != nil:
		return p, fmt.Errorf("cache file %s: %v: name a file in a directory you can write", p, unwrapPath(err))
	case unix.Access(p, unix.W_OK) != nil:
		return p, fmt.Errorf("cache file %s is not writable by you: make it writable, name another file, or read it only (mode ro)", p)
	}
	return p, nil
}

// unwrapPath drops the path os.Stat puts before its reason.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
