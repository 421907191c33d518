package cudnn

import (
	"strconv"
	"strings"
)

// Op is a convolution direction: which of cuDNN's three find functions, and
// which algorithm enum, a result belongs to.
type Op uint8

// The three directions. The values are those of FindKey's op byte.
const (
	Forward        Op = 1 // cudnnFindConvolutionForwardAlgorithm
	BackwardData   Op = 2 // cudnnFindConvolutionBackwardDataAlgorithm
	BackwardFilter Op = 3 // cudnnFindConvolutionBackwardFilterAlgorithm
)

var (
	fwdAlgos = []string{"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT",
		"FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"}
	bwdDataAlgos = []string{"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD",
		"WINOGRAD_NONFUSED"}
	bwdFilterAlgos = []string{"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD",
		"WINOGRAD_NONFUSED", "FFT_TILING"}
)

func (op Op) algos() []string {
	switch op {
	case Forward:
		return fwdAlgos
	case BackwardData:
		return bwdDataAlgos
	case BackwardFilter:
		return bwdFilterAlgos
	}
	return nil
}

// Valid reports whether op is one of the three directions.
func (op Op) Valid() bool { return op >= Forward && op <= BackwardFilter }

// String returns "fwd", "bwd-data" or "bwd-filter".
func (op Op) String() string {
	switch op {
	case Forward:
		return "fwd"
	case BackwardData:
		return "bwd-data"
	case BackwardFilter:
		return "bwd-filter"
	}
	return "op(" + strconv.Itoa(int(op)) + ")"
}

// AlgoCount returns the number of algorithms of op's enum
// (CUDNN_CONVOLUTION_*_ALGO_COUNT): 8, 6 and 7. Valid algorithm values are
// 0 to AlgoCount()-1.
func (op Op) AlgoCount() int { return len(op.algos()) }

// AlgoName returns the name of algorithm a of op's enum without its
// CUDNN_CONVOLUTION_*_ALGO_ prefix, such as "IMPLICIT_PRECOMP_GEMM", or
// "algo(N)" for a value out of range.
func (op Op) AlgoName(a int32) string {
	names := op.algos()
	if a >= 0 && int(a) < len(names) {
		return names[a]
	}
	return "algo(" + strconv.Itoa(int(a)) + ")"
}

// DataType is cudnnDataType_t.
type DataType int32

// dataTypes are cudnnDataType_t's names in value order, as of cuDNN 9.28
// (checked against the real header by make real-cudnn-check).
var dataTypes = []string{"float", "double", "half", "int8", "int32", "int8x4", "uint8",
	"uint8x4", "int8x32", "bfloat16", "int64", "bool", "fp8_e4m3", "fp8_e5m2",
	"fast_float_for_fp8", "fp8_e8m0", "fp4_e2m1", "int4", "uint4", "uint32",
	"complex_fp32", "complex_fp64", "byte_boolean", "fp8_e5m3"}

// String returns the type's cuDNN name in lower case without its
// CUDNN_DATA_ prefix, such as "float" or "bfloat16".
func (t DataType) String() string {
	if t >= 0 && int(t) < len(dataTypes) {
		return dataTypes[t]
	}
	return "dtype(" + strconv.Itoa(int(t)) + ")"
}

// MathType is cudnnMathType_t.
type MathType int32

// String returns "default", "tensor-op", "tensor-op-conv" or "fma".
func (m MathType) String() string {
	switch m {
	case 0:
		return "default"
	case 1:
		return "tensor-op"
	case 2:
		return "tensor-op-conv"
	case 3:
		return "fma"
	}
	return "math(" + strconv.Itoa(int(m)) + ")"
}

// joinInts writes v as "a,b,c", or as "a" when every element is equal
// and collapse is set.
func joinInts[T ~int32 | ~int64](v []T, sep string, collapse bool) string {
	if len(v) == 0 {
		return "-"
	}
	if collapse {
		same := true
		for _, x := range v[1:] {
			same = same && x == v[0]
		}
		if same {
			return strconv.FormatInt(int64(v[0]), 10)
		}
	}
	var b strings.Builder
	for i, x := range v {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(strconv.FormatInt(int64(x), 10))
	}
	return b.String()
}
