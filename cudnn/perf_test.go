package cudnn_test

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/convcache/convcache/cudnn"
)

// cudnnConvolutionFwdAlgoPerf_t{IMPLICIT_PRECOMP_GEMM, SUCCESS, 0.12f, 0,
// DETERMINISTIC, DEFAULT_MATH}, as cuDNN writes it on x86-64.
const precompPerf = `
01000000         # algo 1
00000000         # status success
8fc2f53d         # time 0.12f
00000000         # padding
0000000000000000 # memory 0
01000000         # determinism
00000000         # mathType default
000000000000000000000000 # reserved
00000000         # padding
`

func TestPerfKnownAnswer(t *testing.T) {
	b := hexBytes(t, precompPerf)
	if len(b) != cudnn.PerfSize {
		t.Fatalf("vector is %d bytes", len(b))
	}
	p, ok := cudnn.DecodePerf(b)
	if !ok {
		t.Fatal("DecodePerf rejected a valid perf struct")
	}
	want := cudnn.Perf{Algo: 1, Time: 0.12, Determinism: 1}
	if p != want {
		t.Fatalf("decoded %+v, want %+v", p, want)
	}
	if got := p.Append(nil); !bytes.Equal(got, b) {
		t.Fatalf("Append = %x\nwant     %x", got, b)
	}
	if got, want := p.Format(cudnn.Forward), "IMPLICIT_PRECOMP_GEMM 0.12 ms ws 0 B"; got != want {
		t.Fatalf("Format = %q, want %q", got, want)
	}
	params, _ := cudnn.DecodeParams(hexBytes(t, resnetParams))
	params.AllowTF32 = false
	got := cudnn.Describe(cudnn.Forward, params, p)
	if want := "fwd float NCHW 32x64x56x56 * 64x64x3x3 pad 1 stride 1 -> IMPLICIT_PRECOMP_GEMM 0.12 ms ws 0 B"; got != want {
		t.Fatalf("Describe = %q\nwant         %q", got, want)
	}
}

func TestPerfFormat(t *testing.T) {
	p := cudnn.Perf{Algo: 5, Status: 3000, Time: 1.23456, Memory: 25 << 20, MathType: 1}
	cases := []struct {
		op   cudnn.Op
		want string
	}{
		{cudnn.Forward, "FFT_TILING 1.23 ms ws 25.0 MiB tensor-op nondeterministic status 3000"},
		{cudnn.BackwardData, "WINOGRAD_NONFUSED 1.23 ms ws 25.0 MiB tensor-op nondeterministic status 3000"},
		{cudnn.BackwardFilter, "WINOGRAD_NONFUSED 1.23 ms ws 25.0 MiB tensor-op nondeterministic status 3000"},
		{0, "algo(5) 1.23 ms ws 25.0 MiB tensor-op nondeterministic status 3000"},
	}
	for _, c := range cases {
		if got := p.Format(c.op); got != c.want {
			t.Errorf("%v: Format = %q, want %q", c.op, got, c.want)
		}
	}
	if p.String() != p.Format(0) {
		t.Errorf("String = %q", p.String())
	}
}

func TestAlgoNames(t *testing.T) {
	cases := []struct {
		op    cudnn.Op
		name  string
		count int
		last  string
	}{
		{cudnn.Forward, "fwd", 8, "WINOGRAD_NONFUSED"},
		{cudnn.BackwardData, "bwd-data", 6, "WINOGRAD_NONFUSED"},
		{cudnn.BackwardFilter, "bwd-filter", 7, "FFT_TILING"},
	}
	for _, c := range cases {
		if c.op.String() != c.name || c.op.AlgoCount() != c.count || c.op.AlgoName(int32(c.count-1)) != c.last {
			t.Errorf("%d: %q count %d last %q", c.op, c.op.String(), c.op.AlgoCount(), c.op.AlgoName(int32(c.count-1)))
		}
		if got := c.op.AlgoName(int32(c.count)); got != "algo("+strconv.Itoa(c.count)+")" {
			t.Errorf("%v: out of range name %q", c.op, got)
		}
		if got := c.op.AlgoName(-1); got != "algo(-1)" {
			t.Errorf("%v: negative name %q", c.op, got)
		}
	}
	if cudnn.BackwardFilter.AlgoName(3) != "ALGO_3" || cudnn.BackwardData.AlgoName(3) != "FFT_TILING" {
		t.Error("wrong algorithm enum order")
	}
	if cudnn.Op(4).Valid() || cudnn.Op(0).Valid() || cudnn.Op(4).String() != "op(4)" {
		t.Error("Op 0 and 4 must be invalid")
	}
	if cudnn.DataType(9).String() != "bfloat16" || cudnn.DataType(99).String() != "dtype(99)" {
		t.Error("data type names")
	}
}

func TestDecodePerfs(t *testing.T) {
	one := hexBytes(t, precompPerf)
	if _, ok := cudnn.DecodePerf(one[:47]); ok {
		t.Error("DecodePerf accepted 47 bytes")
	}
	for _, n := range []int{0, 47, 49, 95} {
		if _, ok := cudnn.DecodePerfs(make([]byte, n)); ok {
			t.Errorf("DecodePerfs accepted %d bytes", n)
		}
	}
	two := append(append([]byte(nil), one...), cudnn.Perf{Algo: 7, Time: 2}.Append(nil)...)
	ps, ok := cudnn.DecodePerfs(two)
	if !ok || len(ps) != 2 || ps[0].Algo != 1 || ps[1].Algo != 7 || ps[1].Time != 2 {
		t.Fatalf("DecodePerfs = %+v, %v", ps, ok)
	}
}

func FuzzDecodePerf(f *testing.F) {
	f.Add(hexBytes(f, precompPerf))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, ok := cudnn.DecodePerf(b)
		if !ok {
			return
		}
		got := p.Append(nil)
		want := append([]byte(nil), b...)
		for _, i := range []int{12, 13, 14, 15, 44, 45, 46, 47} {
			want[i] = 0 // padding is not kept
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("round trip changed %x to %x", want, got)
		}
		_ = p.Format(cudnn.Forward)
	})
}
