package main

import (
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// demoWinograd is a value the demo's CPU autotuner stored (make demo, on
// this project's machine) for float NCHW 1x256x6x6 * 256x256x3x3 pad 1:
// winograd in 0.0227 ms, direct 0.0253, im2col+gemm 0.0269, gemm-1x1 not
// applicable, 4489216 bytes of workspace, 0.311 ms of tuning.
const demoWinograd = "0300000000000000a4fbb93c000000000080440000000000af26cf3c5c72dc3c000080bfa4fbb93ce3509f3e00000000"

func demoValue(t testing.TB) []byte {
	b, err := hex.DecodeString(demoWinograd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDemoChoiceKnownAnswer(t *testing.T) {
	c, ok := decodeDemoChoice(demoValue(t))
	if !ok {
		t.Fatal("the demo's value was refused")
	}
	if c.Algo != "winograd" || c.Workspace != 4489216 || len(c.TimesMs) != 3 || c.TimesMs["winograd"] != c.TimeMs {
		t.Fatalf("%+v", c)
	}
	if _, ok := c.TimesMs["gemm-1x1"]; ok {
		t.Fatal("a candidate that does not apply has a time")
	}
	want := "winograd 0.0227 ms ws 4.3 MiB (direct 0.0253, im2col+gemm 0.0269 ms; tuning took 0.311 ms)"
	if s := c.String(); s != want {
		t.Fatalf("String:\n%s\nwant\n%s", s, want)
	}
	wantLines := []string{"direct 0.0253 ms", "im2col+gemm 0.0269 ms", "gemm-1x1 does not apply", "winograd 0.0227 ms (chosen)"}
	if got := c.candidates(); strings.Join(got, "|") != strings.Join(wantLines, "|") {
		t.Fatalf("candidates %q", got)
	}

	// Through ls, under the demo's name, and not under another name.
	path := filepath.Join(t.TempDir(), "demo.ccdb")
	p := params(1, 256, 6, 256)
	liveCache(t, path, "demo-cpu1;cpu=x", torchKey(demoCacheName, p), demoValue(t), torchKey("my.conv2d.fwd", p), demoValue(t))
	r := mustRun(t, exitOK, nil, "ls", path)
	if !strings.Contains(r.stdout, "  demo.conv2d.fwd float NCHW 1x256x6x6 * 256x256x3x3 pad 1 stride 1 -> "+want+"\n") ||
		!strings.Contains(r.stdout, "  my.conv2d.fwd float NCHW 1x256x6x6 * 256x256x3x3 pad 1 stride 1 -> "+demoWinograd[:2*lsHexMax]+"... (48 B)\n") {
		t.Fatalf("ls:\n%s", r.stdout)
	}
}

// Bytes that break any rule of the layout are not the demo's choice.
func TestDemoChoiceRejects(t *testing.T) {
	f32 := func(off int, v float32) func([]byte) {
		return func(b []byte) {
			u := math.Float32bits(v)
			b[off], b[off+1], b[off+2], b[off+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		}
	}
	for name, mut := range map[string]func([]byte){
		"algo past the last":       func(b []byte) { b[0] = 4 },
		"negative algo":            func(b []byte) { b[0], b[1], b[2], b[3] = 0xff, 0xff, 0xff, 0xff },
		"a status":                 func(b []byte) { b[4] = 1 },
		"padding set":              func(b []byte) { b[13] = 1 },
		"reserved set":             func(b []byte) { b[47] = 1 },
		"NaN time":                 f32(8, float32(math.NaN())),
		"negative time":            f32(8, -1),
		"time not the chosen's":    f32(8, 0.5),
		"chosen not applicable":    f32(36, -1),
		"infinite candidate":       f32(24, float32(math.Inf(1))),
		"negative candidate":       f32(28, -0.5),
		"NaN tuning":               f32(40, float32(math.NaN())),
		"chosen time and its slot": func(b []byte) { f32(8, -1)(b); f32(36, -1)(b) },
	} {
		b := demoValue(t)
		mut(b)
		if c, ok := decodeDemoChoice(b); ok {
			t.Errorf("%s: decoded as %+v", name, c)
		}
	}
	for _, n := range []int{0, 47, 49, 96} {
		if _, ok := decodeDemoChoice(make([]byte, n)); ok {
			t.Errorf("%d bytes decoded", n)
		}
	}
}

// The layout and the names are the demo's: checked against its sources, so
// that a change there fails here rather than mislabel a user's entries.
func TestDemoLayoutMatchesSources(t *testing.T) {
	kernels, err := os.ReadFile("../../examples/demo/kernels.hpp")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`static const char \*names\[\] = \{([^}]*)\};`).FindSubmatch(kernels)
	if m == nil {
		t.Fatal("kernels.hpp: no algo_name table")
	}
	var names []string
	for _, n := range strings.Split(string(m[1]), ",") {
		names = append(names, strings.Trim(strings.TrimSpace(n), `"`))
	}
	if strings.Join(names, ",") != strings.Join(demoAlgos[:], ",") {
		t.Errorf("kernels.hpp names %q, demo.go %q", names, demoAlgos)
	}
	src, err := os.ReadFile("../../examples/demo/demo.cpp")
	if err != nil {
		t.Fatal(err)
	}
	m = regexp.MustCompile(`(?s)struct AlgoChoice \{(.*?)\};`).FindSubmatch(src)
	if m == nil {
		t.Fatal("demo.cpp: no struct AlgoChoice")
	}
	var fields []string
	for _, line := range strings.Split(string(m[1]), "\n") {
		if f, _, _ := strings.Cut(line, "//"); strings.TrimSpace(f) != "" {
			fields = append(fields, strings.Join(strings.Fields(f), " "))
		}
	}
	want := []string{"int32_t algo;", "int32_t status;", "float time_ms;", "uint64_t workspace;",
		"float times_ms[kNumAlgos];", "float tuning_ms;", "int32_t reserved;"}
	if strings.Join(fields, " ") != strings.Join(want, " ") {
		t.Errorf("demo.cpp's AlgoChoice is\n%q\ndemo.go decodes\n%q", fields, want)
	}
	if !strings.Contains(string(src), `BenchmarkCache<ConvolutionParams, AlgoChoice> algos(cache, "`+demoCacheName+`")`) {
		t.Errorf("demo.cpp does not store its AlgoChoice under %q", demoCacheName)
	}
}

func FuzzDecodeDemoChoice(f *testing.F) {
	f.Add(demoValue(f))
	f.Add(make([]byte, demoChoiceSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok := decodeDemoChoice(b)
		if !ok {
			return
		}
		if c.TimesMs[c.Algo] != c.TimeMs || c.String() == "" || len(c.candidates()) != len(demoAlgos) {
			t.Fatalf("%x: %+v", b, c)
		}
	})
}
