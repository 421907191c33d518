package main

import (
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/cudnn"
	"github.com/convcache/convcache/internal/cachefile"
)

func ls(t *testing.T, env []string, args ...string) []entryJSON {
	t.Helper()
	r := mustRun(t, exitOK, env, append([]string{"ls", "--json"}, args...)...)
	var es []entryJSON
	decodeJSON(t, r.stdout, &es)
	return es
}

func TestLs(t *testing.T) {
	path := sampleCache(t)
	r := mustRun(t, exitOK, nil, "ls", path)
	want := []string{
		"scope " + gpuB + " (1 entry)",
		"  6f70617175652d6b6579 (10 B) -> deadbeef (4 B)",
		"scope " + gpuA + " (3 entries)",
		"  torch.cudnn.v7.fwd float NCHW 32x64x56x56 * 64x64x3x3 pad 1 stride 1 -> IMPLICIT_PRECOMP_GEMM 0.12 ms ws 0 B",
		"  torch.cudnn.v7.bwd_data float NCHW 32x64x56x56 * 64x64x3x3 pad 1 stride 1 -> ALGO_0 0.31 ms ws 0 B",
		"  torch.cudnn.v7.bwd_filter float NCHW 32x128x28x28 * 128x128x3x3 pad 1 stride 1 -> ALGO_3 0.5 ms ws 0 B",
	}
	for _, w := range want {
		if !strings.Contains(r.stdout, w+"\n") {
			t.Errorf("ls lacks %q:\n%s", w, r.stdout)
		}
	}

	es := ls(t, nil, path)
	if len(es) != 4 {
		t.Fatalf("%d entries", len(es))
	}
	var fwd *entryJSON
	for i := range es {
		if es[i].Op == "fwd" {
			fwd = &es[i]
		}
	}
	if fwd == nil || fwd.Layout != layoutTorchNamed || fwd.Name != v7+"fwd" || fwd.Scope != gpuA ||
		fwd.TimeMs == nil || *fwd.TimeMs < 0.1199 || *fwd.TimeMs > 0.1201 ||
		fwd.KeyBytes != len(v7+"fwd")+1+cudnn.ParamsSize || fwd.ValueBytes != cudnn.PerfSize || time.Since(fwd.Used) > time.Minute {
		t.Fatalf("fwd entry %+v", fwd)
	}
	if fwd.KeyHex != "" || fwd.Params != nil {
		t.Fatal("ls printed dump's fields")
	}

	// Filters: by name, by hash, and "current" through CONVCACHE_SCOPE.
	if es := ls(t, nil, path, "--scope", gpuB); len(es) != 1 || es[0].Layout != "" || es[0].Key != "6f70617175652d6b6579 (10 B)" {
		t.Fatalf("--scope gpuB: %+v", es)
	}
	if es := ls(t, nil, "--scope", hashText(cachefile.ScopeHash(gpuA)), path); len(es) != 3 {
		t.Fatalf("--scope #hash: %d entries", len(es))
	}
	if es := ls(t, []string{"CONVCACHE_SCOPE=" + gpuA}, path, "--scope", "current"); len(es) != 3 || es[0].Scope != gpuA {
		t.Fatalf("--scope current: %+v", es)
	}
	if es := ls(t, nil, path, "--scope", "no-such-scope"); len(es) != 0 {
		t.Fatalf("unknown scope: %+v", es)
	}
	mustRun(t, exitUsage, nil, "ls", path, "--scope", "#123")

	// The default file not created yet lists nothing (a PATH that does not
	// exist is an error: path_test.go).
	r = mustRun(t, exitOK, []string{"CONVCACHE_PATH=" + filepath.Join(t.TempDir(), "new.ccdb")}, "ls", "--json")
	if strings.TrimSpace(r.stdout) != "[]" || !strings.Contains(r.stderr, "has not been created yet") {
		t.Fatalf("missing file: %q %q", r.stdout, r.stderr)
	}
}

// Every key layout the codecs know, and which of them say that their
// values are cuDNN perf structs: the interposer's keys and BenchmarkCache
// names with a "cudnn" part ending in a direction. Every other value is
// hex, even one of exactly 48 bytes, under the demo's own name included
// when it is not a valid AlgoChoice (demo_test.go decodes valid ones).
func TestLsLayouts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "layouts.ccdb")
	p := params(8, 3, 224, 64)
	p.DataType = 2 // half
	p.MemoryFormat = cudnn.ChannelsLast
	fk := cudnn.FindKey{
		Op: cudnn.BackwardFilter, Requested: 7,
		Tensors: [2]cudnn.Tensor{
			{Dims: []int32{16, 32, 14, 14}, Strides: []int32{6272, 196, 14, 1}},
			{Dims: []int32{16, 32, 14, 14}, Strides: []int32{6272, 196, 14, 1}},
		},
		Filter: cudnn.Filter{Dims: []int32{32, 32, 3, 3}},
		Conv:   cudnn.Conv{Pad: []int32{1, 1}, Stride: []int32{1, 1}, Dilation: []int32{1, 1}, Mode: 1, Groups: 1, Reorder: -1},
	}
	two := append(perf(1, 0.8), cudnn.Perf{Algo: 0, Time: 1.5, Determinism: 1}.Append(nil)...)
	// 48 bytes that decode as perf structs with absurd fields.
	nonsense := cudnn.Perf{Algo: 1078712435, Time: 3.5, MathType: 1078712435}.Append(nil)
	liveCache(t, path, "s",
		p.Append(nil), perf(6, 2.5),
		torchKey("my_conv", p), perf(2, 1),
		fk.Append(nil), two,
		torchKey(v7+"fwd", p), []byte("not a perf struct"),
		torchKey("demo.cudnn.bwd_filter", p), perf(3, 0.25),
		torchKey("demo.conv2d.fwd", p), nonsense,
		torchKey("fwd", p), nonsense,
		torchKey("cudnn.cudnn", p), nonsense,
	)
	es := ls(t, nil, path)
	got := map[string]entryJSON{}
	for _, e := range es {
		got[e.Layout+"/"+e.Name] = e
	}
	if len(got) != 8 {
		t.Fatalf("%d entries: %+v", len(got), es)
	}
	hex48 := func(b []byte) string { return hex.EncodeToString(b[:lsHexMax]) + "... (48 B)" }
	find := got[layoutFind+"/"]
	if find.Op != "bwd-filter" || !strings.HasPrefix(find.Key, "bwd-filter x float 16x32x14x14") ||
		find.Value != "ALGO_1 0.8 ms ws 0 B (+1 more)" || find.TimeMs == nil || *find.TimeMs < 0.79 || *find.TimeMs > 0.81 {
		t.Errorf("find key: %+v", find)
	}
	demo := got[layoutTorchNamed+"/demo.cudnn.bwd_filter"]
	if demo.Op != "bwd-filter" || demo.Key != "demo.cudnn.bwd_filter half NHWC 8x3x224x224 * 64x3x3x3 pad 1 stride 1" ||
		demo.Value != "ALGO_3 0.25 ms ws 0 B" || demo.TimeMs == nil {
		t.Errorf("a cudnn name: %+v", demo)
	}
	// Keys decoded, values not: the key does not say they are perf structs.
	for name, value := range map[string]string{
		layoutTorch + "/":                     hex48(perf(6, 2.5)),
		layoutTorchNamed + "/my_conv":         hex48(perf(2, 1)),
		layoutTorchNamed + "/demo.conv2d.fwd": hex48(nonsense),
		layoutTorchNamed + "/fwd":             hex48(nonsense),
		layoutTorchNamed + "/cudnn.cudnn":     hex48(nonsense),
		// A cuDNN name whose value is not perf structs.
		layoutTorchNamed + "/" + v7 + "fwd": hex.EncodeToString([]byte("not a perf struct")) + " (17 B)",
	} {
		e := got[name]
		wantOp := ""
		if strings.HasPrefix(name, layoutTorchNamed+"/"+v7) {
			wantOp = "fwd" // the key says the direction; the value is not perf structs
		}
		if e.Value != value || e.Op != wantOp || e.TimeMs != nil || !strings.HasSuffix(e.Key, "half NHWC 8x3x224x224 * 64x3x3x3 pad 1 stride 1") {
			t.Errorf("%s: %+v, want the value %s", name, e, value)
		}
	}
	r := mustRun(t, exitOK, nil, "ls", path)
	for _, bad := range []string{"math(", "algo(", "1078712435"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("ls decoded a value its key does not vouch for (%q):\n%s", bad, r.stdout)
		}
	}
	// Long unknown values are shortened by ls, not by dump.
	long := make([]byte, 100)
	liveCache(t, path, "s", []byte("k"), long)
	for _, e := range ls(t, nil, path) {
		if e.Key == "6b (1 B)" && e.Value != strings.Repeat("00", lsHexMax)+"... (100 B)" {
			t.Errorf("long value: %q", e.Value)
		}
	}
	r = mustRun(t, exitOK, nil, "dump", path, "--json")
	var full []entryJSON
	decodeJSON(t, r.stdout, &full)
	for _, e := range full {
		if e.Key == "6b (1 B)" && e.Value != strings.Repeat("00", 100)+" (100 B)" {
			t.Errorf("dump shortened a value: %q", e.Value)
		}
	}
}

func TestDump(t *testing.T) {
	path := sampleCache(t)
	r := mustRun(t, exitOK, nil, "dump", path, "--scope", gpuB)
	for _, w := range []string{
		"scope " + gpuB + " (1 entry)",
		"layout    unknown (hex)",
		"key hex (10 B)",
		"00000000  6f 70 61 71 75 65 2d 6b  65 79",
		"|opaque-key|",
		"value hex (4 B)",
		"00000000  de ad be ef",
		"inserted  20",
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("dump lacks %q:\n%s", w, r.stdout)
		}
	}
	r = mustRun(t, exitOK, nil, "dump", path, "--json")
	var es []entryJSON
	decodeJSON(t, r.stdout, &es)
	if len(es) != 4 {
		t.Fatalf("%d entries", len(es))
	}
	for _, e := range es {
		if e.KeyHex == "" || e.ValueHex == "" {
			t.Fatalf("dump lacks hex: %+v", e)
		}
		if e.Op != "fwd" {
			continue
		}
		want := hex.EncodeToString(torchKey(v7+"fwd", params(32, 64, 56, 64)))
		if e.KeyHex != want || e.Params == nil || e.Params.InputSize[1] != 64 || len(e.Perfs) != 1 || e.Perfs[0].Algo != 1 {
			t.Fatalf("fwd entry %+v", e)
		}
	}
}
