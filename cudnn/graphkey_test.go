package cudnn_test

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"testing"

	"github.com/convcache/convcache/cudnn"
)

func v8FwdKey(t testing.TB) []byte {
	t.Helper()
	text, err := os.ReadFile("testdata/v8_fwd_key.txt")
	if err != nil {
		t.Fatal(err)
	}
	return hexBytes(t, string(text))
}

func TestGraphKeyKnownAnswer(t *testing.T) {
	k, ok := cudnn.DecodeGraphKey(v8FwdKey(t))
	if !ok {
		t.Fatal("DecodeGraphKey rejected the interposer's key")
	}
	want := "v8 fwd w float 8x8x3x3 (strides 72,9,3,1) uid 'w' align 16 " +
		"x float 2x8x16x16 (strides 2048,256,16,1) uid 'x' align 16 " +
		"y float 2x8x16x16 (strides 2048,256,16,1) uid 'y' align 16 " +
		"pad 1,1 stride 1,1 dil 1,1 xcorr compute float"
	if got := k.String(); got != want {
		t.Fatalf("String =\n%s\nwant\n%s", got, want)
	}
}

// TestGraphKeyRejects: every truncation and many single-byte changes of a
// good key are refused or decode without panicking; nothing reads past
// the bytes given.
func TestGraphKeyRejects(t *testing.T) {
	good := v8FwdKey(t)
	for n := 0; n < len(good); n++ {
		if _, ok := cudnn.DecodeGraphKey(good[:n]); ok {
			t.Fatalf("a key cut to %d of %d bytes decoded", n, len(good))
		}
	}
	for i := range good {
		for _, v := range []byte{0, 0xff, good[i] ^ 1} {
			b := append([]byte(nil), good...)
			b[i] = v
			if k, ok := cudnn.DecodeGraphKey(b); ok {
				_ = k.String()
			}
		}
	}
	for _, bad := range [][]byte{nil, []byte("ccg"), []byte("ccf1"), append([]byte("ccg1"), 1, 0, 0, 0)} {
		if _, ok := cudnn.DecodeGraphKey(bad); ok {
			t.Fatalf("%x decoded", bad)
		}
	}
}

func choiceRecord(engine, ws int64, knobs ...cudnn.Knob) []byte {
	b := make([]byte, cudnn.ChoiceSize)
	binary.LittleEndian.PutUint32(b, 0x31454343)
	binary.LittleEndian.PutUint16(b[4:], 1)
	binary.LittleEndian.PutUint16(b[6:], cudnn.ChoiceSize)
	binary.LittleEndian.PutUint64(b[8:], uint64(engine))
	binary.LittleEndian.PutUint64(b[16:], uint64(ws))
	binary.LittleEndian.PutUint32(b[24:], uint32(len(knobs)))
	for i, k := range knobs {
		binary.LittleEndian.PutUint32(b[32+16*i:], uint32(k.Type))
		binary.LittleEndian.PutUint64(b[40+16*i:], uint64(k.Value))
	}
	binary.LittleEndian.PutUint32(b[28:], crc32.ChecksumIEEE(b))
	return b
}

func choices(recs ...[]byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, cudnn.ChoicesMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(recs)))
	for _, r := range recs {
		b = append(b, r...)
	}
	return b
}

// withPlans is choices as "CCV2": each record's plan digest follows.
func withPlans(recs ...[]byte) []byte {
	b := choices(recs...)
	binary.LittleEndian.PutUint32(b, cudnn.ChoicesMagicPlans)
	for i := range recs {
		b = binary.LittleEndian.AppendUint64(b, uint64(i)+7)
	}
	return b
}

func TestEngineChoices(t *testing.T) {
	a := choiceRecord(12, 4096, cudnn.Knob{Type: 2, Value: 3}, cudnn.Knob{Type: 14, Value: 1})
	b := choiceRecord(0, 0)
	cs, ok := cudnn.DecodeEngineChoices(choices(a, b))
	if !ok || len(cs) != 2 || cs[0].Tag() != "eng12_k2=3_k14=1" || cs[1].Tag() != "eng0" ||
		cs[0].String() != "eng12_k2=3_k14=1 ws 4.0 KiB" {
		t.Fatalf("decoded %v %v", cs, ok)
	}
	if cs, ok := cudnn.DecodeEngineChoices(withPlans(a, b)); !ok || len(cs) != 2 || cs[0].Tag() != "eng12_k2=3_k14=1" {
		t.Fatalf("CCV2: decoded %v %v", cs, ok)
	}
	// No choice: the one served last failed after timing (stand aside).
	if cs, ok := cudnn.DecodeEngineChoices(choices()); !ok || cs == nil || len(cs) != 0 {
		t.Fatalf("empty CCV1: decoded %v %v", cs, ok)
	}
	unsorted := choiceRecord(1, 0, cudnn.Knob{Type: 14, Value: 1}, cudnn.Knob{Type: 2, Value: 3})
	flipped := append([]byte(nil), a...)
	flipped[100] ^= 1
	for name, v := range map[string][]byte{
		"empty CCV2":     withPlans(),
		"empty, more":    append(choices(), 0),
		"five":           choices(a, b, choiceRecord(1, 0), choiceRecord(2, 0), choiceRecord(3, 0)),
		"repeated":       choices(a, a),
		"unsorted knobs": choices(unsorted),
		"bad checksum":   choices(flipped),
		"short":          choices(a)[:500],
		"trailing":       append(choices(a), 0),
		"negative":       choices(choiceRecord(-1, 0)),
		"CCV2 short":     withPlans(a)[:8+800+4],
		"CCV2 as CCV1":   append(choices(a), withPlans(a)[8+800:]...),
		"CCV1 as CCV2":   withPlans(a)[:8+800],
	} {
		if _, ok := cudnn.DecodeEngineChoices(v); ok {
			t.Errorf("%s: decoded", name)
		}
	}
}
