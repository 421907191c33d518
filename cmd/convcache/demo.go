package main

import (
	byteorder "encoding/binary" // "binary" is the tests' name for the built command
	"math"
	"strconv"
	"strings"

	"github.com/convcache/convcache/internal/bytesize"
)

// The demo's own values (examples/demo): its CPU autotuner stores an
// AlgoChoice (demo.cpp) under the BenchmarkCache name "demo.conv2d.fwd",
// 48 bytes, little-endian, zeroed before it is filled:
//
//	offset  size  field
//	0       4     algo: the fastest, an index into demoAlgos (demo::Algo, kernels.hpp)
//	4       4     status: 0
//	8       4     time_ms (float32): the fastest's time on the reduced problem
//	12      4     padding: 0
//	16      8     workspace (uint64): bytes the fastest needs at the real size
//	24      16    times_ms[4] (float32): each candidate's time; -1 where it does not apply
//	40      4     tuning_ms (float32): how long choosing took
//	44      4     reserved: 0
//
// Its cuDNN path stores cuDNN's perf struct under "demo.cudnn.fwd", which
// describe decodes as cuDNN's. A value under the demo's name that breaks
// any rule above is shown in hex, as any value of no known layout.

// demoCacheName is the BenchmarkCache name of the demo's AlgoChoice values.
const demoCacheName = "demo.conv2d.fwd"

// demoAlgos are the demo's convolution implementations, in demo::Algo
// order (algo_name in kernels.hpp; a test checks the two agree).
var demoAlgos = [...]string{"direct", "im2col+gemm", "gemm-1x1", "winograd"}

const demoChoiceSize = 48

// demoChoice is a decoded AlgoChoice.
type demoChoice struct {
	Algo      string             `json:"algo"`
	TimeMs    float32            `json:"time_ms"`
	Workspace uint64             `json:"workspace"`
	TimesMs   map[string]float32 `json:"times_ms"` // the candidates that applied
	TuningMs  float32            `json:"tuning_ms"`

	algo  int
	times [len(demoAlgos)]float32 // -1: not applicable
}

// decodeDemoChoice decodes b as an AlgoChoice, and reports false for bytes
// that are not one.
func decodeDemoChoice(b []byte) (demoChoice, bool) {
	var c demoChoice
	if len(b) != demoChoiceSize {
		return c, false
	}
	u32 := func(off int) uint32 { return byteorder.LittleEndian.Uint32(b[off:]) }
	f32 := func(off int) float32 { return math.Float32frombits(u32(off)) }
	measured := func(t float32) bool { return t >= 0 && t <= math.MaxFloat32 } // false for NaN too
	algo := int32(u32(0))
	if algo < 0 || int(algo) >= len(demoAlgos) || u32(4) != 0 || u32(12) != 0 || u32(44) != 0 {
		return c, false
	}
	c.algo, c.Algo = int(algo), demoAlgos[algo]
	c.TimeMs, c.Workspace, c.TuningMs = f32(8), byteorder.LittleEndian.Uint64(b[16:]), f32(40)
	c.TimesMs = map[string]float32{}
	for i := range c.times {
		t := f32(24 + 4*i)
		switch {
		case t == -1:
		case measured(t):
			c.TimesMs[demoAlgos[i]] = t
		default:
			return c, false
		}
		c.times[i] = t
	}
	// The fastest was measured, and is the time it records.
	if !measured(c.TimeMs) || !measured(c.TuningMs) || c.times[c.algo] != c.TimeMs {
		return c, false
	}
	return c, true
}

// String is the choice in one line, for example
// "winograd 0.0227 ms ws 4.50 MiB (direct 0.0253, im2col+gemm 0.0269 ms; tuning took 0.311 ms)":
// the fastest, then the other candidates that applied.
func (c *demoChoice) String() string {
	var b strings.Builder
	b.WriteString(c.Algo + " " + msText(c.TimeMs) + " ms ws " + bytesize.Format(c.Workspace) + " (")
	others := 0
	for i, t := range c.times {
		if i == c.algo || t < 0 {
			continue
		}
		if others > 0 {
			b.WriteString(", ")
		}
		b.WriteString(demoAlgos[i] + " " + msText(t))
		others++
	}
	if others > 0 {
		b.WriteString(" ms; ")
	}
	b.WriteString("tuning took " + msText(c.TuningMs) + " ms)")
	return b.String()
}

// candidates writes each candidate's line for dump: "winograd 0.0227 ms
// (chosen)", "gemm-1x1 does not apply".
func (c *demoChoice) candidates() []string {
	var out []string
	for i, t := range c.times {
		line := demoAlgos[i] + " " + msText(t) + " ms"
		switch {
		case t < 0:
			line = demoAlgos[i] + " does not apply"
		case i == c.algo:
			line += " (chosen)"
		}
		out = append(out, line)
	}
	return out
}

func msText(t float32) string { return strconv.FormatFloat(float64(t), 'g', 3, 32) }
