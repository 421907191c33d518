package main

import (
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/convcache/convcache/cudnn"
)

// Key layouts the tool recognises.
const (
	layoutTorch      = "torch"       // PyTorch's ConvolutionParams, 104 bytes
	layoutTorchNamed = "torch-named" // convcache.hpp's BenchmarkCache: name, NUL, ConvolutionParams
	layoutFind       = "cudnn-find"  // the interposer's find-call key (cudnn.FindKey)
	layoutGraph      = "cudnn-graph" // the interposer's backend-API graph key (cudnn.GraphKey)
)

// maxCacheName is convcache.hpp's BenchmarkCache::max_name.
const maxCacheName = 64

// decoded is an entry in human terms, as far as its layout is known.
type decoded struct {
	Layout  string               // "" when the key is not a known layout
	Name    string               // BenchmarkCache name (torch-named)
	Op      cudnn.Op             // the direction of perf-struct values; 0 when none
	Params  *cudnn.Params        // torch layouts
	FindKey *cudnn.FindKey       // cudnn-find
	Perfs   []cudnn.Perf         // nil when the value is not perf structs
	Demo    *demoChoice          // the demo's own value (demo.go); nil otherwise
	Graph   *cudnn.GraphKey      // cudnn-graph
	Choices []cudnn.EngineChoice // a cudnn-graph's value: engine choices, most preferred first
	Key     string               // one-line description of the key
	Value   string               // one-line description of the value
}

// known reports whether both the key and the value were decoded as cuDNN
// results: only then are measured times compared (merge).
func (d *decoded) known() bool { return d.Layout != "" && d.Perfs != nil }

// measuredTime is the time of the result the value holds, in
// milliseconds, where the value was decoded: the fastest successful cuDNN
// result, or the demo's choice.
func (d *decoded) measuredTime() (float64, bool) {
	if d.Demo != nil {
		return float64(d.Demo.TimeMs), true
	}
	if !d.known() {
		return 0, false
	}
	return d.bestTime()
}

// bestTime returns the fastest successful measured time in milliseconds.
func (d *decoded) bestTime() (float64, bool) {
	best, ok := math.Inf(1), false
	for _, p := range d.Perfs {
		t := float64(p.Time)
		if p.Status != 0 || math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
			continue
		}
		if t < best {
			best, ok = t, true
		}
	}
	return best, ok
}

// opByName maps the direction that ends a BenchmarkCache name to its op:
// PyTorch's three caches are named after them ("torch.cudnn.v7.fwd").
var opByName = map[string]cudnn.Op{
	"fwd": cudnn.Forward, "forward": cudnn.Forward,
	"bwd_data": cudnn.BackwardData, "bwd-data": cudnn.BackwardData, "backward_data": cudnn.BackwardData,
	"bwd_filter": cudnn.BackwardFilter, "bwd-filter": cudnn.BackwardFilter, "backward_filter": cudnn.BackwardFilter,
}

// perfOp reports whether a BenchmarkCache name says that its values are
// cuDNN perf structs, and for which direction: the name is dot-separated,
// one part is "cudnn" and the last names the direction, as in
// "torch.cudnn.v7.fwd" or "demo.cudnn.bwd_data". Any other name
// ("demo.conv2d.fwd", "my_conv") holds values of its own layout, which are
// shown in hex: 48 bytes are not a perf struct unless the key says so.
func perfOp(name string) (cudnn.Op, bool) {
	parts := strings.Split(name, ".")
	op, ok := opByName[parts[len(parts)-1]]
	if !ok || !slices.Contains(parts[:len(parts)-1], "cudnn") {
		return 0, false
	}
	return op, true
}

func printableName(b []byte) bool {
	if len(b) == 0 || len(b) > maxCacheName {
		return false
	}
	for _, c := range b {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// describe decodes an entry through the cudnn codecs where its key matches
// a known layout, and falls back to hex (shortened to hexMax bytes; 0 means
// in full). The value is decoded as cuDNN perf structs only when the key
// says it holds them: an interposer key (cudnn.FindKey), or a
// BenchmarkCache key whose name says so (perfOp). A bare ConvolutionParams
// key says nothing about its value. Under the demo's name (demoCacheName)
// the value is decoded as the demo's AlgoChoice; under an interposer graph
// key (cudnn.GraphKey), as the engine choices it stores.
func describe(key, value []byte, hexMax int) decoded {
	var d decoded
	perfs := false
	switch {
	case len(key) == cudnn.ParamsSize:
		if p, ok := cudnn.DecodeParams(key); ok {
			d.Layout, d.Params = layoutTorch, &p
		}
	case len(key) > cudnn.ParamsSize+1 && key[len(key)-cudnn.ParamsSize-1] == 0 &&
		printableName(key[:len(key)-cudnn.ParamsSize-1]):
		if p, ok := cudnn.DecodeParams(key[len(key)-cudnn.ParamsSize:]); ok {
			d.Layout, d.Params = layoutTorchNamed, &p
			d.Name = string(key[:len(key)-cudnn.ParamsSize-1])
			d.Op, perfs = perfOp(d.Name)
		}
	}
	if d.Layout == "" {
		if k, ok := cudnn.DecodeFindKey(key); ok {
			d.Layout, d.FindKey, d.Op, perfs = layoutFind, &k, k.Op, true
		} else if g, ok := cudnn.DecodeGraphKey(key); ok {
			d.Layout, d.Graph, d.Op = layoutGraph, &g, g.Op
			if cs, ok := cudnn.DecodeEngineChoices(value); ok {
				d.Choices = cs
			}
		}
	}
	if perfs {
		if ps, ok := cudnn.DecodePerfs(value); ok {
			d.Perfs = ps
		}
	}
	if d.Layout == layoutTorchNamed && d.Name == demoCacheName {
		if c, ok := decodeDemoChoice(value); ok {
			d.Demo = &c
		}
	}

	switch {
	case d.Params != nil && d.Name != "":
		d.Key = d.Name + " " + d.Params.String()
	case d.Params != nil:
		d.Key = d.Params.String()
	case d.FindKey != nil:
		d.Key = d.FindKey.String()
	case d.Graph != nil:
		d.Key = d.Graph.String()
	default:
		d.Key = hexText(key, hexMax)
	}
	switch {
	case d.Perfs != nil:
		d.Value = d.Perfs[0].Format(d.Op)
		if len(d.Perfs) > 1 {
			d.Value += " (+" + strconv.Itoa(len(d.Perfs)-1) + " more)"
		}
	case d.Demo != nil:
		d.Value = d.Demo.String()
	case d.Choices != nil:
		d.Value = d.Choices[0].String()
		if len(d.Choices) > 1 {
			d.Value += " (+" + strconv.Itoa(len(d.Choices)-1) + " more)"
		}
	default:
		d.Value = hexText(value, hexMax)
	}
	return d
}

// line is the entry in one line: "KEY -> VALUE".
func (d *decoded) line() string { return d.Key + " -> " + d.Value }

// hexText writes b as hex, at most max bytes of it (0: all), and its size:
// "deadbeef (4 B)", "0011...(100 B)".
func hexText(b []byte, max int) string {
	if len(b) == 0 {
		return "(empty)"
	}
	if max > 0 && len(b) > max {
		return hex.EncodeToString(b[:max]) + "... (" + strconv.Itoa(len(b)) + " B)"
	}
	return hex.EncodeToString(b) + " (" + strconv.Itoa(len(b)) + " B)"
}
