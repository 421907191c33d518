package remote

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"
	"syscall"
)

// Bounds of a record MAC key (Options.MACKey) and of the file that holds
// one.
const (
	// MinMACKeySize: a key shorter than 16 bytes (128 bits) is refused.
	MinMACKeySize = 16
	// MaxMACKeySize bounds the key, and what ReadMACKeyFile reads.
	MaxMACKeySize = 4096
)

// tagSize is the size of a record's MAC: HMAC-SHA256.
const tagSize = sha256.Size

// macDomain begins every MAC'd message, so that a key shared with some
// other use can never make a tag valid here.
var macDomain = []byte("convcache remote record\x00")

// macKey computes and checks record tags under one key. Its HMAC states are
// pooled: a tag costs no allocation after warm-up.
type macKey struct{ pool sync.Pool }

func newMACKey(key []byte) *macKey {
	key = bytes.Clone(key)
	m := &macKey{}
	m.pool.New = func() any { return hmac.New(sha256.New, key) }
	return m
}

// appendTag appends the tag of msg to dst. msg may alias dst.
func (m *macKey) appendTag(dst, msg []byte) []byte {
	h := m.pool.Get().(hash.Hash)
	h.Reset()
	h.Write(macDomain)
	h.Write(msg)
	dst = h.Sum(dst)
	m.pool.Put(h)
	return dst
}

// verify reports, in constant time, whether tag is msg's tag.
func (m *macKey) verify(msg, tag []byte) bool {
	var buf [tagSize]byte
	return hmac.Equal(m.appendTag(buf[:0], msg), tag)
}

// CheckMACKey returns an error wrapping ErrMACKey for a key out of bounds
// (New does the same). The error never shows the key.
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
