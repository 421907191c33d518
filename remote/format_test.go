package remote

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		scope, key, value string
	}{
		{"default", "k", ""},
		{"sm_90 driver 550 cudnn 9.1", strings.Repeat("K", 104), strings.Repeat("v", 48)},
		{strings.Repeat("s", 4096), strings.Repeat("k", 4096), strings.Repeat("v", 1<<20)},
	} {
		for _, mk := range []*macKey{nil, newMACKey([]byte("0123456789abcdef"))} {
			rec := appendRecord(nil, tc.scope, []byte(tc.key), []byte(tc.value), 1700000000000, mk)
			if size := recordSize(tc.scope, []byte(tc.key), []byte(tc.value), mk != nil); len(rec) != size {
				t.Fatalf("record is %d bytes, recordSize says %d", len(rec), size)
			}
			v, authenticated, err := parseRecord(rec, tc.scope, []byte(tc.key), 1<<20, mk)
			if err != nil || string(v) != tc.value || authenticated != (mk != nil) {
				t.Fatalf("parseRecord: %v, value %d bytes, want %d, authenticated %v", err, len(v), len(tc.value), authenticated)
			}
		}
	}
}

// A known-answer vector: the layout drawn in doc.go, byte by byte.
func TestRecordLayout(t *testing.T) {
	rec := appendRecord(nil, "sc", []byte("key"), []byte("VAL!"), 0x0102030405060708, nil)
	want := []byte{
		'C', 'C', 'R', 'V', 1, 0, // magic, version, flags
		2, 0, 3, 0, 0, 0, // scope len, key len, reserved
		4, 0, 0, 0, // value len
		8, 7, 6, 5, 4, 3, 2, 1, // written
		's', 'c', 'k', 'e', 'y', 'V', 'A', 'L', '!',
	}
	if !bytes.Equal(rec[:len(want)], want) {
		t.Fatalf("layout\n got %x\nwant %x", rec[:len(want)], want)
	}
	// CRC-32C of the bytes before it, as the standard check value defines it.
	if got, wantCRC := binary.LittleEndian.Uint32(rec[len(want):]), crc32c(rec[:len(want)]); got != wantCRC {
		t.Fatalf("checksum %08x, want %08x", got, wantCRC)
	}
	if crc32c([]byte("123456789")) != 0xE3069283 {
		t.Fatal("the checksum is not CRC-32C (Castagnoli)")
	}
}

func crc32c(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for i := 0; i < 8; i++ {
			crc = crc>>1 ^ 0x82F63B78&-(crc&1)
		}
	}
	return ^crc
}

func TestRecordRejects(t *testing.T) {
	scope, key, value := "scope-A", []byte("key-1"), []byte("value-1")
	good := appendRecord(nil, scope, key, value, 1, nil)
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, tc := range []struct {
		name  string
		rec   []byte
		scope string
		key   string
		max   int
		want  error
	}{
		{"empty", nil, scope, "key-1", 100, errShort},
		{"short", good[:20], scope, "key-1", 100, errShort},
		{"garbage", []byte("this is not a convcache record at all"), scope, "key-1", 100, errMagic},
		{"version", mod(func(b []byte) []byte { b[4] = 2; return b }), scope, "key-1", 100, errVersion},
		{"flags", mod(func(b []byte) []byte { b[5] = 2; return b }), scope, "key-1", 100, errVersion},
		{"MAC flag without a tag", mod(func(b []byte) []byte { b[5] = 1; return b }), scope, "key-1", 100, errLength},
		{"truncated", good[:len(good)-1], scope, "key-1", 100, errLength},
		{"extended", append(bytes.Clone(good), 0), scope, "key-1", 100, errLength},
		{"value len", mod(func(b []byte) []byte { b[12]++; return b }), scope, "key-1", 100, errLength},
		{"checksum", mod(func(b []byte) []byte { b[len(b)-5] ^= 1; return b }), scope, "key-1", 100, errChecksum},
		{"other scope", good, "scope-B", "key-1", 100, errScope},
		{"other key", good, scope, "key-2", 100, errKey},
		{"too large", good, scope, "key-1", len(value) - 1, errTooLarge},
	} {
		_, _, err := parseRecord(tc.rec, tc.scope, []byte(tc.key), tc.max, nil)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// Every single flipped bit is caught.
	for i := range good {
		for bit := 0; bit < 8; bit++ {
			b := bytes.Clone(good)
			b[i] ^= 1 << bit
			if v, _, err := parseRecord(b, scope, key, 100, nil); err == nil {
				t.Fatalf("byte %d bit %d flipped: accepted value %q", i, bit, v)
			}
		}
	}
}

func TestKeys(t *testing.T) {
	k := entryKey("convcache", "scope", []byte("key"))
	if !strings.HasPrefix(k, "convcache:v1:") || len(k) != len("convcache:v1:")+16+1+16 {
		t.Fatalf("entry key %q", k)
	}
	if entryKey("convcache", "scope", []byte("key2")) == k || entryKey("convcache", "scope2", []byte("key")) == k {
		t.Fatal("different scopes or keys share a Redis key")
	}
	if lockKey("convcache", "scope", []byte("key")) != k+":lock" {
		t.Fatal("lock key")
	}
	if got := string(appendHash(nil, 0xab)); got != "00000000000000ab" {
		t.Fatalf("appendHash = %q", got)
	}
}

func FuzzParseRecord(f *testing.F) {
	mk := newMACKey([]byte("fuzzing key 0123"))
	f.Add(appendRecord(nil, "s", []byte("k"), []byte("v"), 1, nil), "s", []byte("k"))
	f.Add(appendRecord(nil, "s", []byte("k"), []byte("v"), 1, mk), "s", []byte("k"))
	f.Add([]byte("CCRV\x01"), "s", []byte("k"))
	f.Fuzz(func(t *testing.T, rec []byte, scope string, key []byte) {
		for _, k := range []*macKey{nil, mk} {
			v, authenticated, err := parseRecord(rec, scope, key, 1<<20, k)
			if err != nil {
				continue
			}
			if authenticated != (k != nil) {
				t.Fatalf("authenticated %v with key %v", authenticated, k != nil)
			}
			if k == nil && rec[5]&flagMAC != 0 {
				continue // a tag read without a key is not checked
			}
			// Whatever is accepted must re-encode to the same record.
			again := appendRecord(nil, scope, key, v, int64(binary.LittleEndian.Uint64(rec[16:])), k)
			if !bytes.Equal(again, rec) {
				t.Fatalf("accepted a record that does not re-encode to itself")
			}
		}
	})
}

func TestQueueDropsOldest(t *testing.T) {
	q := newQueue(4, 1<<20)
	dropped := 0
	for i := 0; i < 10; i++ {
		dropped += q.push(op{kind: opSet, key: string(rune('a' + i))})
	}
	if dropped != 6 || q.len() != 4 {
		t.Fatalf("dropped %d, queued %d; want 6 and 4", dropped, q.len())
	}
	b := q.take(nil, 100, 1<<30)
	if len(b) != 4 || b[0].key != "g" || b[3].key != "j" {
		t.Fatalf("kept %v, want the newest four g..j", b)
	}
	if done, _ := q.finished(b[3].seq); done {
		t.Fatal("in-flight batch counted as finished")
	}
	if n := q.requeue(b); n != 0 || q.len() != 4 {
		t.Fatalf("requeue dropped %d, queued %d", n, q.len())
	}
	// Requeued entries stay in front of newer ones.
	q.push(op{kind: opSet, key: "k"}) // drops g
	b = q.take(nil, 100, 1<<30)
	if keys := b[0].key + b[1].key + b[2].key + b[3].key; keys != "hijk" {
		t.Fatalf("order %q, want hijk", keys)
	}
	mark := q.mark()
	q.done()
	if done, _ := q.finished(mark); !done {
		t.Fatal("not finished after done")
	}
	// The byte bound drops too.
	q = newQueue(100, 3*int64((&op{rec: make([]byte, 100)}).size()))
	dropped = 0
	for i := 0; i < 5; i++ {
		dropped += q.push(op{kind: opSet, rec: make([]byte, 100)})
	}
	if q.len() != 3 || dropped != 2 {
		t.Fatalf("byte bound: %d queued, %d dropped; want 3 and 2", q.len(), dropped)
	}
}
