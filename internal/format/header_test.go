package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/convcache/convcache/internal/errs"
)

func TestHeaderRoundTrip(t *testing.T) {
	now := time.Unix(1700000000, 123)
	h, err := DecodeHeader(EncodeHeader(now, 0))
	if err != nil || h.Version != Version || !h.Created.Equal(now) {
		t.Fatalf("got %+v, %v", h, err)
	}
}

// The header is validated in a fixed order, each failure its own error.
func TestHeaderValidationOrder(t *testing.T) {
	good := EncodeHeader(time.Now(), 0)
	mut := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	// sealed is a header as a writer of that version writes it: its
	// checksum covers its bytes.
	sealed := func(f func(b []byte)) []byte {
		b := mut(f)
		binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
		return b
	}
	cases := []struct {
		name string
		in   []byte
		want error
		is   error
	}{
		{"empty", nil, ErrEmpty, errs.ErrFormat},
		{"truncated", good[:10], errTruncatedHeader, errs.ErrCorrupt},
		{"short foreign", []byte("hello"), ErrForeign, errs.ErrFormat},
		{"foreign", []byte("#!/bin/sh\necho this is a shell script....\n"), ErrForeign, errs.ErrFormat},
		{"newer", sealed(func(b []byte) { b[8] = 2 }), ErrNewer, errs.ErrFormat},
		{"sealed foreign magic", sealed(func(b []byte) { b[1] = 'X' }), ErrForeign, errs.ErrFormat},
		// A flipped bit in the magic number or the version is damage: with
		// them restored, the checksum matches.
		{"flipped magic", mut(func(b []byte) { b[3] ^= 0x10 }), errHeaderDamaged, errs.ErrCorrupt},
		{"flipped version", mut(func(b []byte) { b[10] ^= 0x01 }), errHeaderDamaged, errs.ErrCorrupt},
		{"flipped version to zero", mut(func(b []byte) { b[8] ^= 0x01 }), errHeaderChecksum, errs.ErrCorrupt},
		{"newer and bad sum", mut(func(b []byte) { b[8] = 9; b[29] ^= 1 }), ErrNewer, errs.ErrFormat},
		{"bad sum", mut(func(b []byte) { b[17] ^= 4 }), errHeaderChecksum, errs.ErrCorrupt},
		{"version zero", mut(func(b []byte) { b[8] = 0 }), errHeaderChecksum, errs.ErrCorrupt},
		{"bad size", mut(func(b []byte) { b[12] = 33 }), errHeaderChecksum, errs.ErrCorrupt},
	}
	for _, c := range cases {
		_, err := DecodeHeader(c.in)
		if err != c.want || !errors.Is(err, c.is) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}
