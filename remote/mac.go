package remote

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"sync"

	"github.com/convcache/convcache/internal/config"
)

// Bounds of a record MAC key (Options.MACKey), as internal/config reads
// one from its file.
const (
	MinMACKeySize = config.MinMACKeySize
	MaxMACKeySize = config.MaxMACKeySize
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
