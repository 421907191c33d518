package main

import (
	le "encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"os"
	"strings"
	"testing"
)

// v8Record is an engine choice record (include/convcache_engine.h) for
// engine e with one knob (type 14, value v) and workspace ws.
func v8Record(e, v, ws int64) []byte {
	b := make([]byte, 800)
	le.LittleEndian.PutUint32(b, 0x31454343)
	le.LittleEndian.PutUint16(b[4:], 1)
	le.LittleEndian.PutUint16(b[6:], 800)
	le.LittleEndian.PutUint64(b[8:], uint64(e))
	le.LittleEndian.PutUint64(b[16:], uint64(ws))
	le.LittleEndian.PutUint32(b[24:], 1)
	le.LittleEndian.PutUint32(b[32:], 14)
	le.LittleEndian.PutUint64(b[40:], uint64(v))
	le.LittleEndian.PutUint32(b[28:], crc32.ChecksumIEEE(b))
	return b
}

// TestDescribeGraphKey: the interposer's backend-API entries (a graph key
// as the C interposer writes it, a list of engine choices) are shown in
// human terms by ls and dump; a damaged value falls back to hex.
func TestDescribeGraphKey(t *testing.T) {
	text, err := os.ReadFile("../../cudnn/testdata/v8_fwd_key.txt")
	if err != nil {
		t.Fatal(err)
	}
	var clean strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(line, "#") {
			clean.WriteString(strings.TrimSpace(line))
		}
	}
	key, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatal(err)
	}
	value := le.LittleEndian.AppendUint32(nil, 0x31564343)
	value = le.LittleEndian.AppendUint32(value, 2)
	value = append(value, v8Record(5, 4, 16384)...)
	value = append(value, v8Record(0, 1, 0)...)
	d := describe(key, value, 32)
	if d.Layout != layoutGraph || !strings.HasPrefix(d.Key, "v8 fwd w float 8x8x3x3") ||
		d.Value != "eng5_k14=4 ws 16.0 KiB (+1 more)" || len(d.Choices) != 2 {
		t.Fatalf("described %q -> %q (layout %q)", d.Key, d.Value, d.Layout)
	}
	value[100] ^= 1
	if d := describe(key, value, 32); d.Choices != nil || !strings.HasSuffix(d.Value, "(1608 B)") {
		t.Fatalf("a damaged value decoded: %q", d.Value)
	}
}
