package cudnn

import (
	"math"
	"strconv"
	"strings"
)

// GraphKeyMagic starts every key the interposer stores a backend-API
// ("v8") convolution graph's choices under; its last byte is the layout
// version. The layout is drawn in the package documentation.
const GraphKeyMagic = "ccg1"

// Backend descriptor types and attribute names the graph key holds, as
// cudnn_graph.h numbers them.
const (
	descConvolution    = 1
	descConvForward    = 10
	descConvBwdFilter  = 11
	descConvBwdData    = 12
	descOperationGraph = 15
	descTensor         = 17

	attrConvCompType    = 100
	attrConvMode        = 101
	attrConvDilations   = 102
	attrConvStrides     = 103
	attrConvPostPadding = 104
	attrConvPrePadding  = 105
	attrConvSpatialDims = 106
	attrGraphOps        = 801
	attrTensorAlignment = 900
	attrTensorDataType  = 901
	attrTensorDims      = 902
	attrTensorStrides   = 903
	attrTensorUID       = 906
	attrTensorVirtual   = 907

	typeBoolean    = 2
	typeInt64      = 3
	typeFloat      = 4
	typeDouble     = 5
	typeDescriptor = 15
)

// maxGraphDepth bounds the nesting of descriptors in a key: a graph holds
// an operation, which holds tensors and a convolution.
const maxGraphDepth = 3

// GraphAttr is one attribute as the key holds it (as the host set it, or,
// for a tensor's or convolution's, mostly as cuDNN read it back): its
// cudnn_graph.h name and type, its element count, and either its elements'
// bytes (Raw) or, for a descriptor-valued attribute, the descriptors it
// holds (Subs).
type GraphAttr struct {
	Name, Type, Count int
	Raw               []byte
	Subs              []GraphDesc
}

// GraphDesc is a backend descriptor's type and the attributes set on it,
// sorted by name.
type GraphDesc struct {
	Type  int
	Attrs []GraphAttr
}

// GraphKey is a decoded graph key: the graph, and the one convolution
// operation it holds.
type GraphKey struct {
	Graph GraphDesc
	Op    Op        // the operation's direction
	OpDsc GraphDesc // the operation
}

// DecodeGraphKey decodes an interposer graph key. It reports false for
// anything that is not a complete layout-1 key of a graph holding one
// convolution operation, with nothing after it.
func DecodeGraphKey(b []byte) (GraphKey, bool) {
	var k GraphKey
	if len(b) < 4 || string(b[:4]) != GraphKeyMagic {
		return k, false
	}
	attrs, ok := decodeAttrs(b[4:], 0)
	if !ok {
		return k, false
	}
	k.Graph = GraphDesc{Type: descOperationGraph, Attrs: attrs}
	ops := k.Graph.attr(attrGraphOps)
	if ops == nil || len(ops.Subs) != 1 {
		return GraphKey{}, false
	}
	k.OpDsc = ops.Subs[0]
	switch k.OpDsc.Type {
	case descConvForward:
		k.Op = Forward
	case descConvBwdData:
		k.Op = BackwardData
	case descConvBwdFilter:
		k.Op = BackwardFilter
	default:
		return GraphKey{}, false
	}
	return k, true
}

// decodeAttrs reads records until b ends: u16 name, u8 type, u8 0, u16
// count, u16 length, then length bytes. Every length is checked against
// the bytes that carry it.
func decodeAttrs(b []byte, depth int) ([]GraphAttr, bool) {
	var out []GraphAttr
	last := -1
	for len(b) > 0 {
		if len(b) < 8 || b[3] != 0 {
			return nil, false
		}
		a := GraphAttr{Name: int(le.Uint16(b)), Type: int(b[2]), Count: int(le.Uint16(b[4:]))}
		n := int(le.Uint16(b[6:]))
		if a.Name <= last || len(b) < 8+n {
			return nil, false // unsorted, repeated or cut short
		}
		last = a.Name
		data := b[8 : 8+n]
		b = b[8+n:]
		if a.Type == typeDescriptor {
			if depth >= maxGraphDepth {
				return nil, false
			}
			for len(data) > 0 {
				if len(data) < 4 {
					return nil, false
				}
				t, m := int(le.Uint16(data)), int(le.Uint16(data[2:]))
				if len(data) < 4+m {
					return nil, false
				}
				sub, ok := decodeAttrs(data[4:4+m], depth+1)
				if !ok {
					return nil, false
				}
				a.Subs = append(a.Subs, GraphDesc{Type: t, Attrs: sub})
				data = data[4+m:]
			}
			if len(a.Subs) != a.Count {
				return nil, false
			}
		} else {
			a.Raw = data
		}
		out = append(out, a)
	}
	return out, true
}

func (d GraphDesc) attr(name int) *GraphAttr {
	for i := range d.Attrs {
		if d.Attrs[i].Name == name {
			return &d.Attrs[i]
		}
	}
	return nil
}

// ints reads an INT64 attribute's elements.
func (d GraphDesc) ints(name int) []int64 {
	a := d.attr(name)
	if a == nil || a.Type != typeInt64 || len(a.Raw) != 8*a.Count {
		return nil
	}
	v := make([]int64, a.Count)
	for i := range v {
		v[i] = int64(le.Uint64(a.Raw[8*i:]))
	}
	return v
}

// enum reads a one-element 4-byte attribute (an enumerated type).
func (d GraphDesc) enum(name int) (int32, bool) {
	a := d.attr(name)
	if a == nil || a.Count != 1 || len(a.Raw) != 4 {
		return 0, false
	}
	return int32(le.Uint32(a.Raw)), true
}

func joinInt64(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(s, "x")
}

func (d GraphDesc) tensorString() string {
	var b strings.Builder
	if dt, ok := d.enum(attrTensorDataType); ok {
		b.WriteString(DataType(dt).String() + " ")
	}
	b.WriteString(joinInt64(d.ints(attrTensorDims)))
	b.WriteString(" (strides " + strings.ReplaceAll(joinInt64(d.ints(attrTensorStrides)), "x", ",") + ")")
	if uid := d.ints(attrTensorUID); len(uid) == 1 {
		u := strconv.FormatInt(uid[0], 10)
		if uid[0] >= 'a' && uid[0] <= 'z' {
			u = "'" + string(rune(uid[0])) + "'"
		}
		b.WriteString(" uid " + u)
	}
	if al := d.ints(attrTensorAlignment); len(al) == 1 {
		b.WriteString(" align " + strconv.FormatInt(al[0], 10))
	}
	if v := d.attr(attrTensorVirtual); v != nil && v.Type == typeBoolean && len(v.Raw) == 1 && v.Raw[0] != 0 {
		b.WriteString(" virtual")
	}
	return b.String()
}

func (d GraphDesc) convString() string {
	var b strings.Builder
	comma := func(v []int64) string { return strings.ReplaceAll(joinInt64(v), "x", ",") }
	b.WriteString("pad " + comma(d.ints(attrConvPrePadding)))
	if post := comma(d.ints(attrConvPostPadding)); post != comma(d.ints(attrConvPrePadding)) {
		b.WriteString("/" + post)
	}
	b.WriteString(" stride " + comma(d.ints(attrConvStrides)))
	b.WriteString(" dil " + comma(d.ints(attrConvDilations)))
	if m, ok := d.enum(attrConvMode); ok {
		b.WriteString(map[bool]string{true: " xcorr", false: " conv"}[m == 1])
	}
	if ct, ok := d.enum(attrConvCompType); ok {
		b.WriteString(" compute " + DataType(ct).String())
	}
	return b.String()
}

// scalar reads an operation's alpha or beta (FLOAT or DOUBLE).
func (d GraphDesc) scalar(name int) (float64, bool) {
	a := d.attr(name)
	switch {
	case a == nil || a.Count != 1:
		return 0, false
	case a.Type == typeFloat && len(a.Raw) == 4:
		return float64(math.Float32frombits(le.Uint32(a.Raw))), true
	case a.Type == typeDouble && len(a.Raw) == 8:
		return math.Float64frombits(le.Uint64(a.Raw)), true
	}
	return 0, false
}

// String describes k in one line, for example
// "v8 fwd x float 32x64x56x56 (strides ...) uid 'x' align 16 w ... y ... pad 1,1 stride 1,1 dil 1,1 xcorr compute float".
func (k GraphKey) String() string {
	// The operation's attributes from its first (alpha) on: alpha, beta,
	// conv, then its three tensors in the order cudnn_graph.h names them.
	base := map[Op]int{Forward: 700, BackwardData: 706, BackwardFilter: 712}[k.Op]
	names := map[Op][3]string{Forward: {"w", "x", "y"}, BackwardData: {"w", "dx", "dy"},
		BackwardFilter: {"dw", "x", "dy"}}[k.Op]
	var b strings.Builder
	b.WriteString("v8 " + k.Op.String())
	for i, n := range names {
		if t := k.OpDsc.attr(base + 3 + i); t != nil && len(t.Subs) == 1 && t.Subs[0].Type == descTensor {
			b.WriteString(" " + n + " " + t.Subs[0].tensorString())
		}
	}
	if c := k.OpDsc.attr(base + 2); c != nil && len(c.Subs) == 1 && c.Subs[0].Type == descConvolution {
		b.WriteString(" " + c.Subs[0].convString())
	}
	alpha, aok := k.OpDsc.scalar(base)
	beta, bok := k.OpDsc.scalar(base + 1)
	if aok && bok && (alpha != 1 || beta != 0) {
		b.WriteString(" alpha " + strconv.FormatFloat(alpha, 'g', -1, 64) + " beta " + strconv.FormatFloat(beta, 'g', -1, 64))
	}
	return b.String()
}
