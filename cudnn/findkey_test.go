package cudnn_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/convcache/convcache/cudnn"
)

// fwdExKey reads the key of testdata/fwd_ex_key.txt, which the C
// interposer's test also checks against what it builds.
func fwdExKey(t testing.TB) []byte {
	t.Helper()
	text, err := os.ReadFile("testdata/fwd_ex_key.txt")
	if err != nil {
		t.Fatal(err)
	}
	return hexBytes(t, string(text))
}

func TestFindKeyKnownAnswer(t *testing.T) {
	b := fwdExKey(t)
	k, ok := cudnn.DecodeFindKey(b)
	if !ok {
		t.Fatal("DecodeFindKey rejected a valid key")
	}
	nchw := cudnn.Tensor{DataType: 0, Dims: []int32{32, 64, 56, 56}, Strides: []int32{200704, 3136, 56, 1}}
	if k.Op != cudnn.Forward || !k.Ex || k.Requested != 8 || k.Workspace != 1<<20 ||
		k.Filter.Format != 0 || len(k.Filter.Dims) != 4 || k.Filter.Dims[2] != 3 ||
		k.Conv.Mode != 1 || k.Conv.MathType != 0 || k.Conv.Groups != 1 || k.Conv.Pad[1] != 1 ||
		k.Tensors[0].String() != nchw.String() || k.Tensors[1].String() != nchw.String() {
		t.Fatalf("decoded %+v", k)
	}
	if got := k.Append(nil); !bytes.Equal(got, b) {
		t.Fatalf("Append = %x\nwant     %x", got, b)
	}
	want := "fwd-ex x float 32x64x56x56 (strides 200704,3136,56,1) w float NCHW 64x64x3x3 " +
		"y float 32x64x56x56 (strides 200704,3136,56,1) pad 1 stride 1 dil 1 xcorr compute float " +
		"math default groups 1 req 8 ws 1.0 MiB"
	if got := k.String(); got != want {
		t.Fatalf("String = %q\nwant       %q", got, want)
	}
}

func TestFindKeyRoundTrip(t *testing.T) {
	x := cudnn.Tensor{DataType: 2, Dims: []int32{1, 2, 3}, Strides: []int32{6, 3, 1}}
	dy := cudnn.Tensor{DataType: 2, Dims: []int32{1, 2, 1}, Strides: []int32{2, 1, 1}}
	f := cudnn.Filter{DataType: 2, Format: 1, Dims: []int32{2, 2, 3}}
	c := cudnn.Conv{Pad: []int32{0}, Stride: []int32{2}, Dilation: []int32{1}, ComputeType: 0, Groups: 1, Reorder: -1}
	for _, op := range []cudnn.Op{cudnn.Forward, cudnn.BackwardData, cudnn.BackwardFilter} {
		k := cudnn.FindKey{Op: op, Requested: 3, Tensors: [2]cudnn.Tensor{x, dy}, Filter: f, Conv: c}
		b := k.Append(nil)
		got, ok := cudnn.DecodeFindKey(b)
		if !ok || !bytes.Equal(got.Append(nil), b) || got.String() != k.String() {
			t.Errorf("%v: round trip failed: %v %q", op, ok, got.String())
		}
	}
}

func TestDecodeFindKeyRejects(t *testing.T) {
	good := fwdExKey(t)
	cases := map[string]func([]byte) []byte{
		"empty":         func([]byte) []byte { return nil },
		"magic":         func(b []byte) []byte { b[3] = '2'; return b },
		"op 0":          func(b []byte) []byte { b[4] = 0; return b },
		"op 4":          func(b []byte) []byte { b[4] = 4; return b },
		"ex 2":          func(b []byte) []byte { b[5] = 2; return b },
		"reserved":      func(b []byte) []byte { b[7] = 1; return b },
		"truncated":     func(b []byte) []byte { return b[:len(b)-1] },
		"trailing":      func(b []byte) []byte { return append(b, 0) },
		"9 dims":        func(b []byte) []byte { b[24] = 9; return b },
		"negative dims": func(b []byte) []byte { b[24], b[25], b[26], b[27] = 0xff, 0xff, 0xff, 0xff; return b },
		"params":        func([]byte) []byte { return hexBytes(t, resnetParams) },
	}
	for name, mutate := range cases {
		if _, ok := cudnn.DecodeFindKey(mutate(append([]byte(nil), good...))); ok {
			t.Errorf("%s: DecodeFindKey accepted it", name)
		}
	}
}

func FuzzDecodeFindKey(f *testing.F) {
	f.Add(fwdExKey(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, ok := cudnn.DecodeFindKey(b)
		if !ok {
			return
		}
		if got := k.Append(nil); !bytes.Equal(got, b) {
			t.Fatalf("round trip changed %x to %x", b, got)
		}
		_ = k.String()
	})
}
