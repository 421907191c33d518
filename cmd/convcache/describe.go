package main

import (
	"encoding/hex"
	"math"
	"strconv"

	"github.com/convcache/convcache/cudnn"
)

// Key layouts the tool recognises.
const (
	layoutTorch      = "torch"       // PyTorch's ConvolutionParams, 104 bytes
	layoutTorchNamed = "torch-named" // convcache.hpp's BenchmarkCache: name, NUL, ConvolutionParams
	layoutFind       = "cudnn-find"  // the interposer's find-call key (cudnn.FindKey)
)

// maxCacheName is convcache.hpp's BenchmarkCache::max_name.
const maxCacheName = 64

// decoded is an entry in human terms, as far as its layout is known.
type decoded struct {
	Layout  string         // "" when the key is not a known layout
	Name    string         // BenchmarkCache name (torch-named)
	Op      cudnn.Op       // 0 when the direction is not known
	Params  *cudnn.Params  // torch layouts
	FindKey *cudnn.FindKey // cudnn-find
	Perfs   []cudnn.Perf   // nil when the value is not perf structs
	Key     string         // one-line description of the key
	Value   string         // one-line description of the value
}

// known reports whether both the key and the value were decoded: only then
// are measured times compared.
func (d *decoded) known() bool { return d.Layout != "" && d.Perfs != nil }

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

// opByName maps BenchmarkCache names to directions: PyTorch's three caches
// are conventionally named after them.
var opByName = map[string]cudnn.Op{
	"fwd": cudnn.Forward, "forward": cudnn.Forward,
	"bwd_data": cudnn.BackwardData, "bwd-data": cudnn.BackwardData, "backward_data": cudnn.BackwardData,
	"bwd_filter": cudnn.BackwardFilter, "bwd-filter": cudnn.BackwardFilter, "backward_filter": cudnn.BackwardFilter,
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
// in full).
func describe(key, value []byte, hexMax int) decoded {
	var d decoded
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
			d.Op = opByName[d.Name]
		}
	}
	if d.Layout == "" {
		if k, ok := cudnn.DecodeFindKey(key); ok {
			d.Layout, d.FindKey, d.Op = layoutFind, &k, k.Op
		}
	}
	if d.Layout != "" {
		if ps, ok := cudnn.DecodePerfs(value); ok {
			d.Perfs = ps
		}
	}

	switch {
	case d.Params != nil:
		d.Key = d.Params.String()
		if d.Op != 0 {
			d.Key = d.Op.String() + " " + d.Key
		} else if d.Name != "" {
			d.Key = d.Name + " " + d.Key
		}
	case d.FindKey != nil:
		d.Key = d.FindKey.String()
	default:
		d.Key = hexText(key, hexMax)
	}
	if d.Perfs != nil {
		d.Value = d.Perfs[0].Format(d.Op)
		if len(d.Perfs) > 1 {
			d.Value += " (+" + strconv.Itoa(len(d.Perfs)-1) + " more)"
		}
	} else {
		d.Value = hexText(value, hexMax)
	}
	return d
}

// line is the entry in one line: "KEY -> VALUE".
func (d *decoded) line() string { return d.Key + " -> " + d.Value }

// hexText writes b as hex, at most max bytes of it (0: all), with its size
// when shortened.
func hexText(b []byte, max int) string {
	if max > 0 && len(b) > max {
		return hex.EncodeToString(b[:max]) + "... (" + strconv.Itoa(len(b)) + " B)"
	}
	if len(b) == 0 {
		return "(empty)"
	}
	return hex.EncodeToString(b)
}
