package cudnn

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// ParamsSize is the size of PyTorch's ConvolutionParams on x86-64.
const ParamsSize = 104

// MemoryFormat is PyTorch's at::MemoryFormat as ConvolutionParams stores it.
type MemoryFormat int8

// The memory formats.
const (
	Contiguous     MemoryFormat = 0
	Preserve       MemoryFormat = 1
	ChannelsLast   MemoryFormat = 2
	ChannelsLast3d MemoryFormat = 3
)

// Params is PyTorch's ConvolutionParams (aten/src/ATen/native/cudnn/
// ConvShared.h), the key of its cuDNN BenchmarkCache. Its 104 bytes:
//
//	offset  field          type
//	0       DeviceID       int16 (int8 in older builds: same offsets)
//	4       DataType       int32 (cudnnDataType_t)
//	8       InputSize      [5]int32
//	28      InputDim       uint8
//	29      MemoryFormat   int8
//	32      WeightSize     [5]int32
//	52      Padding        [3]int32
//	64      Stride         [3]int32
//	76      Dilation       [3]int32
//	88      Groups         int64
//	96      Deterministic  bool
//	97      AllowTF32      bool
//
// PyTorch zeroes the struct before filling it, so the padding bytes (2-3,
// 30-31, 98-103) are zero.
type Params struct {
	DeviceID      int16
	DataType      DataType
	InputSize     [5]int32
	InputDim      uint8
	MemoryFormat  MemoryFormat
	WeightSize    [5]int32
	Padding       [3]int32
	Stride        [3]int32
	Dilation      [3]int32
	Groups        int64
	Deterministic bool
	AllowTF32     bool
}

var le = binary.LittleEndian

func getInts(b []byte, dst []int32) {
	for i := range dst {
		dst[i] = int32(le.Uint32(b[4*i:]))
	}
}

func putInts(b []byte, src []int32) {
	for i, v := range src {
		le.PutUint32(b[4*i:], uint32(v))
	}
}

// DecodeParams decodes a ConvolutionParams. It reports false unless b is
// exactly ParamsSize bytes with zero padding, booleans of 0 or 1 and an
// input dimension count of at most 5: bytes that are something else are not
// mistaken for one.
func DecodeParams(b []byte) (Params, bool) {
	var p Params
	if len(b) != ParamsSize {
		return p, false
	}
	for _, i := range []int{2, 3, 30, 31, 98, 99, 100, 101, 102, 103} {
		if b[i] != 0 {
			return p, false
		}
	}
	if b[96] > 1 || b[97] > 1 || b[28] > 5 {
		return p, false
	}
	p.DeviceID = int16(le.Uint16(b[0:]))
	p.DataType = DataType(le.Uint32(b[4:]))
	getInts(b[8:], p.InputSize[:])
	p.InputDim = b[28]
	p.MemoryFormat = MemoryFormat(int8(b[29]))
	getInts(b[32:], p.WeightSize[:])
	getInts(b[52:], p.Padding[:])
	getInts(b[64:], p.Stride[:])
	getInts(b[76:], p.Dilation[:])
	p.Groups = int64(le.Uint64(b[88:]))
	p.Deterministic = b[96] == 1
	p.AllowTF32 = b[97] == 1
	return p, true
}

// Append appends p's ParamsSize-byte encoding to dst.
func (p Params) Append(dst []byte) []byte {
	var b [ParamsSize]byte
	le.PutUint16(b[0:], uint16(p.DeviceID))
	le.PutUint32(b[4:], uint32(p.DataType))
	putInts(b[8:], p.InputSize[:])
	b[28] = p.InputDim
	b[29] = byte(p.MemoryFormat)
	putInts(b[32:], p.WeightSize[:])
	putInts(b[52:], p.Padding[:])
	putInts(b[64:], p.Stride[:])
	putInts(b[76:], p.Dilation[:])
	le.PutUint64(b[88:], uint64(p.Groups))
	if p.Deterministic {
		b[96] = 1
	}
	if p.AllowTF32 {
		b[97] = 1
	}
	return append(dst, b[:]...)
}

// Layout names the input's memory layout: NCHW, NHWC, NCDHW, NDHWC, ...
func (p Params) Layout() string {
	spatial := "DHW"
	n := int(p.InputDim) - 2
	if n < 1 || n > 3 {
		n = 0
	}
	s := spatial[3-n:]
	switch p.MemoryFormat {
	case Contiguous:
		return "NC" + s
	case ChannelsLast, ChannelsLast3d:
		return "N" + s + "C"
	case Preserve:
		return "preserve"
	}
	return "format(" + strconv.Itoa(int(p.MemoryFormat)) + ")"
}

// String describes p, for example
// "float NCHW 32x64x56x56 * 64x64x3x3 pad 1 stride 1". Dilation, groups,
// deterministic, tf32 and the device follow when they are not the defaults.
func (p Params) String() string {
	dim := int(p.InputDim)
	if dim > 5 {
		dim = 5
	}
	sp := dim - 2
	if sp < 0 {
		sp = 0
	}
	var b strings.Builder
	b.WriteString(p.DataType.String())
	b.WriteByte(' ')
	b.WriteString(p.Layout())
	b.WriteByte(' ')
	b.WriteString(joinInts(p.InputSize[:dim], "x", false))
	b.WriteString(" * ")
	b.WriteString(joinInts(p.WeightSize[:dim], "x", false))
	b.WriteString(" pad ")
	b.WriteString(joinInts(p.Padding[:sp], ",", true))
	b.WriteString(" stride ")
	b.WriteString(joinInts(p.Stride[:sp], ",", true))
	if d := joinInts(p.Dilation[:sp], ",", true); d != "1" && d != "-" {
		b.WriteString(" dil ")
		b.WriteString(d)
	}
	if p.Groups != 1 {
		b.WriteString(" groups ")
		b.WriteString(strconv.FormatInt(p.Groups, 10))
	}
	if p.Deterministic {
		b.WriteString(" deterministic")
	}
	if p.AllowTF32 {
		b.WriteString(" tf32")
	}
	if p.DeviceID != 0 {
		b.WriteString(" dev ")
		b.WriteString(strconv.Itoa(int(p.DeviceID)))
	}
	return b.String()
}
