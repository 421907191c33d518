package remote

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strconv"
	"testing"
)

var (
	testKey  = []byte("0123456789abcdef0123456789abcdef")
	otherKey = []byte("another cluster's key, 32 bytes.")
)

// A known-answer layout of a record with a MAC: flag bit 0 set, the tag
// (HMAC-SHA256 under the key of the domain string and every byte before
// the tag) after the value, the CRC over everything before it.
func TestRecordMACLayout(t *testing.T) {
	rec := appendRecord(nil, "sc", []byte("key"), []byte("VAL!"), 7, newMACKey(testKey))
	body := headerSize + 2 + 3 + 4
	if len(rec) != body+tagSize+trailerSize || rec[5] != flagMAC {
		t.Fatalf("record %x", rec)
	}
	h := hmac.New(sha256.New, testKey)
	h.Write([]byte("convcache remote record\x00"))
	h.Write(rec[:body])
	if !bytes.Equal(rec[body:body+tagSize], h.Sum(nil)) {
		t.Fatal("the tag is not HMAC-SHA256(key, domain || record before the tag)")
	}
	if got := binary.LittleEndian.Uint32(rec[body+tagSize:]); got != crc32c(rec[:body+tagSize]) {
		t.Fatal("the CRC does not cover the tag")
	}
}

// withCRC recomputes a record's checksum after an edit: a forger can.
func withCRC(b []byte) []byte {
	n := len(b) - trailerSize
	binary.LittleEndian.PutUint32(b[n:], crc32.Checksum(b[:n], castagnoli))
	return b
}

// Forged records, each with a right checksum, are rejected by a reader
// with the key.
func TestRecordMACRejects(t *testing.T) {
	scope, key, value := "scope-A", []byte("key-1"), []byte("value-1")
	mk := newMACKey(testKey)
	good := appendRecord(nil, scope, key, value, 1, mk)
	tag := len(good) - trailerSize - tagSize
	edit := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return withCRC(b)
	}
	for _, tc := range []struct {
		name string
		rec  []byte
		want error
	}{
		{"no MAC", appendRecord(nil, scope, key, value, 1, nil), errUnsigned},
		{"wrong MAC", edit(func(b []byte) { b[tag] ^= 1 }), errMAC},
		{"MAC under another key", appendRecord(nil, scope, key, value, 1, newMACKey(otherKey)), errMAC},
		{"MAC'd for another scope", withCRC(func() []byte {
			b := appendRecord(nil, "scope-B", key, value, 1, mk)
			copy(b[headerSize:], scope) // the scope rewritten to the one asked for
			return b
		}()), errMAC},
		{"MAC'd for another key", withCRC(func() []byte {
			b := appendRecord(nil, scope, []byte("key-2"), value, 1, mk)
			copy(b[headerSize+len(scope):], key)
			return b
		}()), errMAC},
		{"value changed", edit(func(b []byte) { b[tag-1] ^= 1 }), errMAC},
		{"time changed", edit(func(b []byte) { b[16] ^= 1 }), errMAC},
		{"MAC flag cleared", edit(func(b []byte) { b[5] = 0 }), errLength},
	} {
		if v, _, err := parseRecord(tc.rec, scope, key, 100, mk); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %q, %v; want %v", tc.name, v, err, tc.want)
		}
	}
	// Every single flipped bit is caught.
	for i := range good {
		for bit := 0; bit < 8; bit++ {
			b := bytes.Clone(good)
			b[i] ^= 1 << bit
			if v, _, err := parseRecord(b, scope, key, 100, mk); err == nil {
				t.Fatalf("byte %d bit %d flipped: accepted value %q", i, bit, v)
			}
		}
	}
	// A reader before the MAC (version 1, flags must be 0) rejects a
	// record with one as a newer format.
	if good[4] != recordVersion || good[5] == 0 {
		t.Fatal("a MAC'd record must keep version 1 and set a flag")
	}
	// Without a key, a MAC'd record is read, unauthenticated.
	if v, authenticated, err := parseRecord(good, scope, key, 100, nil); err != nil || authenticated || !bytes.Equal(v, value) {
		t.Fatalf("keyless read of a MAC'd record: %q %v %v", v, authenticated, err)
	}
}

func TestMACKeyBounds(t *testing.T) {
	for _, n := range []int{1, MinMACKeySize - 1, MaxMACKeySize + 1} {
		if _, err := New(Options{URL: "redis://127.0.0.1:1/0", MACKey: make([]byte, n)}); !errors.Is(err, ErrMACKey) {
			t.Errorf("a %d-byte key: %v", n, err)
		}
	}
	for _, n := range []int{MinMACKeySize, MaxMACKeySize} {
		r, err := New(Options{URL: "redis://127.0.0.1:1/0", MACKey: make([]byte, n)})
		if err != nil || !r.Authenticated() {
			t.Fatalf("a %d-byte key: %v", n, err)
		}
		r.Close()
	}
	if r, err := New(Options{URL: "redis://127.0.0.1:1/0"}); err != nil || r.Authenticated() {
		t.Fatalf("no key: %v", err)
	}
}

// What a record's checks cost, with and without a MAC, for a typical
// 48-byte cuDNN result and the largest value.
func BenchmarkParseRecord(b *testing.B) {
	for _, size := range []int{48, 1 << 20} {
		for _, mk := range []*macKey{nil, newMACKey(testKey)} {
			name := "plain-"
			if mk != nil {
				name = "mac-"
			}
			key := bytes.Repeat([]byte("k"), 104)
			rec := appendRecord(nil, "sm_90 driver 550 cudnn 9.1", key, make([]byte, size), 1, mk)
			b.Run(name+strconv.Itoa(size), func(b *testing.B) {
				b.SetBytes(int64(len(rec)))
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := parseRecord(rec, "sm_90 driver 550 cudnn 9.1", key, 1<<20, mk); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
