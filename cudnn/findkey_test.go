package cudnn_test

import (
	"bytes"
	"testing"

	"github.com/convcache/convcache/cudnn"
)

// A cudnnFindConvolutionForwardAlgorithmEx key: NCHW float 32x64x56x56,
// 3x3 filter, pad 1, cross-correlation, tensor-op math, 8 requested, 1 MiB
// workspace.
const fwdExKey = `
63636631 01 01 0000   # "ccf1", forward, Ex, reserved
08000000              # requested 8
0000100000000000      # workspace 1 MiB
00000000 04000000     # x: float, 4 dims
20000000 40000000 38000000 38000000  # dims
00100300 400c0000 38000000 01000000  # strides 200704 3136 56 1
00000000 00000000 04000000           # w: float, NCHW, 4 dims
40000000 40000000 03000000 03000000  # dims
02000000 01000000 01000000           # conv: 2 spatial dims, pad 1 1
01000000 01000000 01000000 01000000  # stride 1 1, dilation 1 1
01000000 00000000 01000000 01000000 00000000 # xcorr, compute float, tensor-op, groups 1, reorder 0
00000000 04000000                    # y: float, 4 dims
20000000 40000000 38000000 38000000
00100300 400c0000 38000000 01000000
`

func TestFindKeyKnownAnswer(t *testing.T) {
	b := hexBytes(t, fwdExKey)
	k, ok := cudnn.DecodeFindKey(b)
	if !ok {
		t.Fatal("DecodeFindKey rejected a valid key")
	}
	nchw := cudnn.Tensor{DataType: 0, Dims: []int32{32, 64, 56, 56}, Strides: []int32{200704, 3136, 56, 1}}
	if k.Op != cudnn.Forward || !k.Ex || k.Requested != 8 || k.Workspace != 1<<20 ||
		k.Filter.Format != 0 || len(k.Filter.Dims) != 4 || k.Filter.Dims[2] != 3 ||
		k.Conv.Mode != 1 || k.Conv.MathType != 1 || k.Conv.Groups != 1 || k.Conv.Pad[1] != 1 ||
		k.Tensors[0].String() != nchw.String() || k.Tensors[1].String() != nchw.String() {
		t.Fatalf("decoded %+v", k)
	}
	if got := k.Append(nil); !bytes.Equal(got, b) {
		t.Fatalf("Append = %x\nwant     %x", got, b)
	}
	want := "fwd-ex x float 32x64x56x56 (strides 200704,3136,56,1) w float NCHW 64x64x3x3 " +
		"y float 32x64x56x56 (strides 200704,3136,56,1) pad 1 stride 1 dil 1 xcorr compute float " +
		"math tensor-op groups 1 req 8 ws 1.0 MiB"
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
	good := hexBytes(t, fwdExKey)
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
	f.Add(hexBytes(f, fwdExKey))
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
