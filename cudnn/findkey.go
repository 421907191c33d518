package cudnn

import (
	"strconv"
	"strings"

	"github.com/convcache/convcache/internal/bytesize"
)

// FindKeyMagic starts every key the interposer writes; its last byte is the
// layout version.
const FindKeyMagic = "ccf1"

// maxDims is CUDNN_DIM_MAX: no descriptor has more dimensions.
const maxDims = 8

// Tensor is a cudnnTensorDescriptor_t's content.
type Tensor struct {
	DataType DataType
	Dims     []int32
	Strides  []int32
}

// Filter is a cudnnFilterDescriptor_t's content.
type Filter struct {
	DataType DataType
	Format   int32 // cudnnTensorFormat_t: 0 NCHW, 1 NHWC, 2 NCHW_VECT_C
	Dims     []int32
}

// Conv is a cudnnConvolutionDescriptor_t's content.
type Conv struct {
	Pad, Stride, Dilation []int32 // one per spatial dimension
	Mode                  int32   // 0 convolution, 1 cross-correlation
	ComputeType           DataType
	MathType              MathType
	Groups                int32
	Reorder               int32 // cudnnReorderType_t; -1 when unknown
}

// FindKey is the key the interposer stores a find call's results under.
// Its layout is drawn in the package documentation.
type FindKey struct {
	Op        Op
	Ex        bool   // a ...Ex call
	Requested int32  // requestedAlgoCount
	Workspace uint64 // workspace bytes offered (Ex only)
	// The descriptors in the call's argument order; see the package doc.
	// For Forward: Tensors {x, y}, Filter w. BackwardData: Filter w,
	// Tensors {dy, dx}. BackwardFilter: Tensors {x, dy}, Filter dw.
	Tensors [2]Tensor
	Filter  Filter
	Conv    Conv
}

type keyReader struct {
	b   []byte
	bad bool
}

func (r *keyReader) i32() int32 {
	if len(r.b) < 4 {
		r.bad = true
		return 0
	}
	v := int32(le.Uint32(r.b))
	r.b = r.b[4:]
	return v
}

func (r *keyReader) ints(n int32, max int) []int32 {
	if n < 0 || int(n) > max {
		r.bad = true
		return nil
	}
	v := make([]int32, n)
	for i := range v {
		v[i] = r.i32()
	}
	return v
}

func (r *keyReader) tensor() Tensor {
	t := Tensor{DataType: DataType(r.i32())}
	n := r.i32()
	t.Dims = r.ints(n, maxDims)
	t.Strides = r.ints(n, maxDims)
	return t
}

func (r *keyReader) filter() Filter {
	f := Filter{DataType: DataType(r.i32()), Format: r.i32()}
	f.Dims = r.ints(r.i32(), maxDims)
	return f
}

func (r *keyReader) conv() Conv {
	n := r.i32()
	c := Conv{Pad: r.ints(n, maxDims-2), Stride: r.ints(n, maxDims-2), Dilation: r.ints(n, maxDims-2)}
	c.Mode = r.i32()
	c.ComputeType = DataType(r.i32())
	c.MathType = MathType(r.i32())
	c.Groups = r.i32()
	c.Reorder = r.i32()
	return c
}

// DecodeFindKey decodes an interposer key. It reports false for anything
// that is not a complete layout-1 key with nothing after it.
func DecodeFindKey(b []byte) (FindKey, bool) {
	var k FindKey
	if len(b) < 20 || string(b[:4]) != FindKeyMagic || b[5] > 1 || b[6] != 0 || b[7] != 0 {
		return k, false
	}
	k.Op = Op(b[4])
	if !k.Op.Valid() {
		return k, false
	}
	k.Ex = b[5] == 1
	k.Requested = int32(le.Uint32(b[8:]))
	k.Workspace = le.Uint64(b[12:])
	r := keyReader{b: b[20:]}
	switch k.Op {
	case Forward:
		k.Tensors[0] = r.tensor()
		k.Filter = r.filter()
		k.Conv = r.conv()
		k.Tensors[1] = r.tensor()
	case BackwardData:
		k.Filter = r.filter()
		k.Tensors[0] = r.tensor()
		k.Conv = r.conv()
		k.Tensors[1] = r.tensor()
	case BackwardFilter:
		k.Tensors[0] = r.tensor()
		k.Tensors[1] = r.tensor()
		k.Conv = r.conv()
		k.Filter = r.filter()
	}
	if r.bad || len(r.b) != 0 {
		return FindKey{}, false
	}
	return k, true
}

func appendI32(dst []byte, v ...int32) []byte {
	for _, x := range v {
		dst = le.AppendUint32(dst, uint32(x))
	}
	return dst
}

func (t Tensor) append(dst []byte) []byte {
	dst = appendI32(dst, int32(t.DataType), int32(len(t.Dims)))
	dst = appendI32(dst, t.Dims...)
	return appendI32(dst, t.Strides...)
}

func (f Filter) append(dst []byte) []byte {
	dst = appendI32(dst, int32(f.DataType), f.Format, int32(len(f.Dims)))
	return appendI32(dst, f.Dims...)
}

func (c Conv) append(dst []byte) []byte {
	dst = appendI32(dst, int32(len(c.Pad)))
	dst = appendI32(dst, c.Pad...)
	dst = appendI32(dst, c.Stride...)
	dst = appendI32(dst, c.Dilation...)
	return appendI32(dst, c.Mode, int32(c.ComputeType), int32(c.MathType), c.Groups, c.Reorder)
}

// Append appends k's encoding to dst. Strides must have as many elements as
// Dims, and Stride and Dilation as many as Pad.
func (k FindKey) Append(dst []byte) []byte {
	dst = append(dst, FindKeyMagic...)
	ex := byte(0)
	if k.Ex {
		ex = 1
	}
	dst = append(dst, byte(k.Op), ex, 0, 0)
	dst = appendI32(dst, k.Requested)
	dst = le.AppendUint64(dst, k.Workspace)
	switch k.Op {
	case Forward:
		dst = k.Tensors[0].append(dst)
		dst = k.Filter.append(dst)
		dst = k.Conv.append(dst)
		dst = k.Tensors[1].append(dst)
	case BackwardData:
		dst = k.Filter.append(dst)
		dst = k.Tensors[0].append(dst)
		dst = k.Conv.append(dst)
		dst = k.Tensors[1].append(dst)
	case BackwardFilter:
		dst = k.Tensors[0].append(dst)
		dst = k.Tensors[1].append(dst)
		dst = k.Conv.append(dst)
		dst = k.Filter.append(dst)
	}
	return dst
}

func (t Tensor) String() string {
	return t.DataType.String() + " " + joinInts(t.Dims, "x", false) + " (strides " + joinInts(t.Strides, ",", false) + ")"
}

var formats = []string{"NCHW", "NHWC", "NCHW_VECT_C"}

func (f Filter) String() string {
	fm := "format(" + strconv.Itoa(int(f.Format)) + ")"
	if f.Format >= 0 && int(f.Format) < len(formats) {
		fm = formats[f.Format]
	}
	return f.DataType.String() + " " + fm + " " + joinInts(f.Dims, "x", false)
}

func (c Conv) String() string {
	var b strings.Builder
	b.WriteString("pad " + joinInts(c.Pad, ",", true))
	b.WriteString(" stride " + joinInts(c.Stride, ",", true))
	b.WriteString(" dil " + joinInts(c.Dilation, ",", true))
	if c.Mode == 0 {
		b.WriteString(" conv")
	} else if c.Mode == 1 {
		b.WriteString(" xcorr")
	} else {
		b.WriteString(" mode(" + strconv.Itoa(int(c.Mode)) + ")")
	}
	b.WriteString(" compute " + c.ComputeType.String())
	b.WriteString(" math " + c.MathType.String())
	b.WriteString(" groups " + strconv.Itoa(int(c.Groups)))
	if c.Reorder > 0 {
		b.WriteString(" reorder " + strconv.Itoa(int(c.Reorder)))
	}
	return b.String()
}

// String describes k in one line, for example
// "fwd x float 32x64x56x56 (strides ...) w float NCHW 64x64x3x3 pad 1 ... y ... req 8".
func (k FindKey) String() string {
	names := [3]string{"x", "w", "y"}
	switch k.Op {
	case BackwardData:
		names = [3]string{"dy", "w", "dx"}
	case BackwardFilter:
		names = [3]string{"x", "dw", "dy"}
	}
	var b strings.Builder
	b.WriteString(k.Op.String())
	if k.Ex {
		b.WriteString("-ex")
	}
	b.WriteString(" " + names[0] + " " + k.Tensors[0].String())
	if k.Op == BackwardFilter {
		b.WriteString(" " + names[2] + " " + k.Tensors[1].String())
		b.WriteString(" " + names[1] + " " + k.Filter.String())
	} else {
		b.WriteString(" " + names[1] + " " + k.Filter.String())
		b.WriteString(" " + names[2] + " " + k.Tensors[1].String())
	}
	b.WriteString(" " + k.Conv.String())
	b.WriteString(" req " + strconv.Itoa(int(k.Requested)))
	if k.Ex {
		b.WriteString(" ws " + bytesize.Format(k.Workspace))
	}
	return b.String()
}
