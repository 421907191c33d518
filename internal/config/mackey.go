package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// Bounds of a record MAC key (remote.Options.MACKey) and of the file that
// holds one.
const (
	// MinMACKeySize: a key shorter than 16 bytes (128 bits) is refused.
	MinMACKeySize = 16
	// MaxMACKeySize bounds the key, and what ReadMACKeyFile reads.
	MaxMACKeySize = 4096
)

// ErrMACKey: the record MAC key is out of bounds, or its file cannot be
// used. Package remote returns it too (remote.ErrMACKey is this value).
var ErrMACKey = errors.New("remote: unusable MAC key")

// CheckMACKey returns an error wrapping ErrMACKey for a key out of bounds
// (remote.New does the same). The error never shows the key.
func CheckMACKey(key []byte) error {
	if len(key) < MinMACKeySize || len(key) > MaxMACKeySize {
		return fmt.Errorf("%w: the key is %d bytes; it must be %d to %d", ErrMACKey, len(key), MinMACKeySize, MaxMACKeySize)
	}
	return nil
}

// ReadMACKeyFile reads a record key from a file, with the care a secret
// needs where other users may plant files: a symbolic link is not followed
// (O_NOFOLLOW), a FIFO or device is refused without blocking, and the file
// must be a regular file owned by the effective user or root that no other
// user can write and that is not readable by all (group-readable is fine:
// a team may share one key). At most MaxMACKeySize bytes are read; white
// space at the end (a newline) is not part of the key. Errors wrap
// ErrMACKey and never show the key.
func ReadMACKeyFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok && pe.Err == syscall.ELOOP {
			return nil, fmt.Errorf("%w: %s is a symbolic link; name the file itself", ErrMACKey, path)
		}
		return nil, fmt.Errorf("%w: %v", ErrMACKey, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMACKey, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrMACKey, path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("%w: %s: cannot tell its owner", ErrMACKey, path)
	}
	if euid := os.Geteuid(); st.Uid != uint32(euid) && st.Uid != 0 {
		return nil, fmt.Errorf("%w: %s belongs to uid %d, not to this user (%d) or root", ErrMACKey, path, st.Uid, euid)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 || perm&0o004 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o; it must not be writable by group or others, nor readable by others (chmod 600 or 640)", ErrMACKey, path, perm)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxMACKeySize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMACKey, path, err)
	}
	if len(b) > MaxMACKeySize {
		return nil, fmt.Errorf("%w: %s is longer than %d bytes", ErrMACKey, path, MaxMACKeySize)
	}
	key := bytes.TrimRight(b, " \t\r\n")
	if err := CheckMACKey(key); err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return key, nil
}

// MACKey returns the record MAC key for the remote tier: the key in the
// file that CONVCACHE_REMOTE_KEY_FILE names (ReadMACKeyFile), or
// CONVCACHE_REMOTE_KEY itself, without white space at its end. Neither
// set: nil and true. A key asked for that cannot be used (both variables
// set, a file refused, a key out of bounds) prints one warning, which never
// shows the key, and returns false: the caller must then go without the
// tier, since a tier without the key would trust the records the key was
// meant to check.
func (v vars) MACKey() ([]byte, bool) {
	path := v.trimmed("CONVCACHE_REMOTE_KEY_FILE")
	inline := strings.TrimRight(v.get("CONVCACHE_REMOTE_KEY"), " \t\r\n")
	const def = "the local cache only"
	switch {
	case path != "" && inline != "":
		warn("CONVCACHE_REMOTE_KEY", "(hidden)", "CONVCACHE_REMOTE_KEY_FILE is set too; set one of them", def)
		return nil, false
	case path != "":
		key, err := ReadMACKeyFile(path)
		if err != nil {
			warn("CONVCACHE_REMOTE_KEY_FILE", path, strings.TrimPrefix(err.Error(), "remote: "), def)
			return nil, false
		}
		return key, true
	case inline != "":
		if err := CheckMACKey([]byte(inline)); err != nil {
			warn("CONVCACHE_REMOTE_KEY", "(hidden)", strings.TrimPrefix(err.Error(), "remote: "), def)
			return nil, false
		}
		return []byte(inline), true
	}
	return nil, true
}
