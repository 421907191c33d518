package cudnn

import (
	"math"
	"strconv"
	"strings"

	"github.com/convcache/convcache/internal/bytesize"
)

// PerfSize is the size of cuDNN's cudnnConvolution{Fwd,BwdData,BwdFilter}
// AlgoPerf_t on 64-bit platforms.
const PerfSize = 48

// Perf is one cudnnConvolution*AlgoPerf_t (the three share a layout):
//
//	offset  field        type
//	0       Algo         int32 (the direction's algorithm enum)
//	4       Status       int32 (cudnnStatus_t; 0 is success)
//	8       Time         float32, milliseconds
//	16      Memory       uint64 (size_t), workspace bytes
//	24      Determinism  int32 (1 deterministic)
//	28      MathType     int32 (cudnnMathType_t)
//	32      Reserved     [3]int32
//
// Bytes 12-15 and 44-47 are padding, ignored when decoding and written as
// zero.
type Perf struct {
	Algo        int32
	Status      int32
	Time        float32
	Memory      uint64
	Determinism int32
	MathType    MathType
	Reserved    [3]int32
}

// DecodePerf decodes one perf struct; it reports false unless b is exactly
// PerfSize bytes.
func DecodePerf(b []byte) (Perf, bool) {
	var p Perf
	if len(b) != PerfSize {
		return p, false
	}
	p.Algo = int32(le.Uint32(b[0:]))
	p.Status = int32(le.Uint32(b[4:]))
	p.Time = math.Float32frombits(le.Uint32(b[8:]))
	p.Memory = le.Uint64(b[16:])
	p.Determinism = int32(le.Uint32(b[24:]))
	p.MathType = MathType(le.Uint32(b[28:]))
	getInts(b[32:], p.Reserved[:])
	return p, true
}

// DecodePerfs decodes an array of perf structs, as cuDNN's find functions
// return and the interposer stores them; it reports false unless b is a
// non-empty multiple of PerfSize bytes.
func DecodePerfs(b []byte) ([]Perf, bool) {
	if len(b) == 0 || len(b)%PerfSize != 0 {
		return nil, false
	}
	out := make([]Perf, 0, len(b)/PerfSize)
	for ; len(b) > 0; b = b[PerfSize:] {
		p, _ := DecodePerf(b[:PerfSize])
		out = append(out, p)
	}
	return out, true
}

// Append appends p's PerfSize-byte encoding to dst.
func (p Perf) Append(dst []byte) []byte {
	var b [PerfSize]byte
	le.PutUint32(b[0:], uint32(p.Algo))
	le.PutUint32(b[4:], uint32(p.Status))
	le.PutUint32(b[8:], math.Float32bits(p.Time))
	le.PutUint64(b[16:], p.Memory)
	le.PutUint32(b[24:], uint32(p.Determinism))
	le.PutUint32(b[28:], uint32(p.MathType))
	putInts(b[32:], p.Reserved[:])
	return append(dst, b[:]...)
}

// Format describes p as a result of op, for example
// "IMPLICIT_PRECOMP_GEMM 0.12 ms ws 0 B". A math type other than the
// default, a nondeterministic algorithm and a failed status follow.
func (p Perf) Format(op Op) string {
	var b strings.Builder
	b.WriteString(op.AlgoName(p.Algo))
	b.WriteByte(' ')
	b.WriteString(strconv.FormatFloat(float64(p.Time), 'g', 3, 32))
	b.WriteString(" ms ws ")
	b.WriteString(bytesize.Format(p.Memory))
	if p.MathType != 0 {
		b.WriteByte(' ')
		b.WriteString(p.MathType.String())
	}
	if p.Determinism == 0 {
		b.WriteString(" nondeterministic")
	}
	if p.Status != 0 {
		b.WriteString(" status ")
		b.WriteString(strconv.Itoa(int(p.Status)))
	}
	return b.String()
}

// String describes p without knowing its direction: the algorithm is a
// number, as in "algo(1) 0.12 ms ws 0 B".
func (p Perf) String() string { return p.Format(0) }

// Describe writes a PyTorch cache entry in one line, for example
// "fwd float NCHW 32x64x56x56 * 64x64x3x3 pad 1 stride 1 -> IMPLICIT_PRECOMP_GEMM 0.12 ms ws 0 B".
func Describe(op Op, p Params, perf Perf) string {
	return op.String() + " " + p.String() + " -> " + perf.Format(op)
}
