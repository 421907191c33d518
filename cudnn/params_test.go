package cudnn_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/convcache/convcache/cudnn"
)

// hexBytes decodes hex written with spaces and comments (# to end of line).
func hexBytes(t testing.TB, s string) []byte {
	t.Helper()
	var clean strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A ResNet-50 3x3 convolution as PyTorch 2.x lays out ConvolutionParams on
// x86-64, written out field by field.
const resnetParams = `
0000 0000                                    # device_id 0, padding
00000000                                     # dataType CUDNN_DATA_FLOAT
20000000 40000000 38000000 38000000 00000000 # input_size 32 64 56 56 0
04 00 0000                                   # input_dim 4, memory_format contiguous, padding
40000000 40000000 03000000 03000000 00000000 # weight_size 64 64 3 3 0
01000000 01000000 00000000                   # padding 1 1 0
01000000 01000000 00000000                   # stride 1 1 0
01000000 01000000 00000000                   # dilation 1 1 0
0100000000000000                             # groups 1
00 01 000000000000                           # deterministic 0, allow_tf32 1, padding
`

func TestParamsKnownAnswer(t *testing.T) {
	b := hexBytes(t, resnetParams)
	if len(b) != cudnn.ParamsSize {
		t.Fatalf("vector is %d bytes", len(b))
	}
	p, ok := cudnn.DecodeParams(b)
	if !ok {
		t.Fatal("DecodeParams rejected a valid ConvolutionParams")
	}
	want := cudnn.Params{
		DataType:     0,
		InputSize:    [5]int32{32, 64, 56, 56, 0},
		InputDim:     4,
		MemoryFormat: cudnn.Contiguous,
		WeightSize:   [5]int32{64, 64, 3, 3, 0},
		Padding:      [3]int32{1, 1, 0},
		Stride:       [3]int32{1, 1, 0},
		Dilation:     [3]int32{1, 1, 0},
		Groups:       1,
		AllowTF32:    true,
	}
	if p != want {
		t.Fatalf("decoded %+v\nwant    %+v", p, want)
	}
	if got := p.Append(nil); !bytes.Equal(got, b) {
		t.Fatalf("Append = %x\nwant     %x", got, b)
	}
	if got, want := p.String(), "float NCHW 32x64x56x56 * 64x64x3x3 pad 1 stride 1 tf32"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
}

func TestParamsString(t *testing.T) {
	p := cudnn.Params{
		DeviceID: 3, DataType: 2, InputDim: 5, MemoryFormat: cudnn.ChannelsLast3d,
		InputSize: [5]int32{8, 32, 16, 112, 112}, WeightSize: [5]int32{64, 1, 3, 7, 7},
		Padding: [3]int32{1, 3, 3}, Stride: [3]int32{1, 2, 2}, Dilation: [3]int32{2, 2, 2},
		Groups: 32, Deterministic: true,
	}
	want := "half NDHWC 8x32x16x112x112 * 64x1x3x7x7 pad 1,3,3 stride 1,2,2 dil 2 groups 32 deterministic dev 3"
	if got := p.String(); got != want {
		t.Fatalf("String = %q\nwant       %q", got, want)
	}
	p.InputDim, p.MemoryFormat, p.DataType = 4, cudnn.ChannelsLast, 9
	if got := p.Layout(); got != "NHWC" {
		t.Fatalf("Layout = %q, want NHWC", got)
	}
}

func TestDecodeParamsRejects(t *testing.T) {
	good := hexBytes(t, resnetParams)
	cases := map[string]func([]byte) []byte{
		"short":          func(b []byte) []byte { return b[:103] },
		"long":           func(b []byte) []byte { return append(b, 0) },
		"padding 2":      func(b []byte) []byte { b[2] = 1; return b },
		"padding 30":     func(b []byte) []byte { b[30] = 1; return b },
		"tail padding":   func(b []byte) []byte { b[103] = 9; return b },
		"deterministic":  func(b []byte) []byte { b[96] = 2; return b },
		"allow_tf32":     func(b []byte) []byte { b[97] = 0xff; return b },
		"input_dim >5":   func(b []byte) []byte { b[28] = 6; return b },
		"interposer key": func([]byte) []byte { return []byte("ccf1") },
	}
	for name, mutate := range cases {
		b := mutate(append([]byte(nil), good...))
		if _, ok := cudnn.DecodeParams(b); ok {
			t.Errorf("%s: DecodeParams accepted it", name)
		}
	}
}

func FuzzDecodeParams(f *testing.F) {
	f.Add(hexBytes(f, resnetParams))
	f.Add(make([]byte, cudnn.ParamsSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, ok := cudnn.DecodeParams(b)
		if !ok {
			return
		}
		if got := p.Append(nil); !bytes.Equal(got, b) {
			t.Fatalf("round trip changed %x to %x", b, got)
		}
		_ = p.String()
	})
}
