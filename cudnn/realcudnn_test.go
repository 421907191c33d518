package cudnn

import (
	"bufio"
	"encoding/hex"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// realValues is what tests/realcudnn/gen.py's values program printed when
// compiled against NVIDIA's real headers: enumerators in header order,
// macros, struct sizes and offsets, and the bytes of one perf struct.
type realValues struct {
	enums    map[string][]enumerator // enum type -> enumerators, in order
	defines  map[string]int64
	sizeof   map[string]int64
	offsetof map[string]int64 // "type field"
	bytes    map[string][]byte
}

type enumerator struct {
	name  string
	value int64
}

// loadRealValues reads $CONVCACHE_REAL_CUDNN_VALUES. The test is skipped
// when it is unset (plain go test); make real-cudnn-check sets it, and
// then any problem with the file fails the test.
func loadRealValues(t *testing.T) *realValues {
	t.Helper()
	path := os.Getenv("CONVCACHE_REAL_CUDNN_VALUES")
	if path == "" {
		t.Skip("CONVCACHE_REAL_CUDNN_VALUES is not set: run make real-cudnn-check")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v := &realValues{enums: map[string][]enumerator{}, defines: map[string]int64{},
		sizeof: map[string]int64{}, offsetof: map[string]int64{}, bytes: map[string][]byte{}}
	sc := bufio.NewScanner(f)
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return n
	}
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		switch {
		case len(w) == 4 && w[0] == "enum":
			v.enums[w[1]] = append(v.enums[w[1]], enumerator{w[2], num(w[3])})
		case len(w) == 3 && w[0] == "define":
			v.defines[w[1]] = num(w[2])
		case len(w) == 3 && w[0] == "sizeof":
			v.sizeof[w[1]] = num(w[2])
		case len(w) == 4 && w[0] == "offsetof":
			v.offsetof[w[1]+" "+w[2]] = num(w[3])
		case len(w) == 3 && w[0] == "perfbytes":
			b, err := hex.DecodeString(w[2])
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			v.bytes[w[1]] = b
		default:
			t.Fatalf("%s: unexpected line %q", path, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(v.enums["cudnnStatus_t"]) == 0 || len(v.bytes) != 3 {
		t.Fatalf("%s: incomplete (%d status values, %d perf structs)", path,
			len(v.enums["cudnnStatus_t"]), len(v.bytes))
	}
	return v
}

// enumTable checks that names[i] is the name of the enumerator with value
// i (without prefix, through rename), for every enumerator of enum but the
// _COUNT one, and that no value is missing from names.
func enumTable(t *testing.T, v *realValues, enum, prefix string, names []string,
	rename func(string) string) {
	t.Helper()
	es := v.enums[enum]
	if len(es) == 0 {
		t.Fatalf("%s: no enumerators", enum)
	}
	seen := 0
	for _, e := range es {
		if strings.HasSuffix(e.name, "_COUNT") {
			if int(e.value) != len(names) {
				t.Errorf("%s = %d, Go's table has %d names", e.name, e.value, len(names))
			}
			continue
		}
		want := rename(strings.TrimPrefix(e.name, prefix))
		if e.value < 0 || int(e.value) >= len(names) {
			t.Errorf("%s = %d: Go's table has no name for it (%d names)", e.name, e.value, len(names))
			continue
		}
		if names[e.value] != want {
			t.Errorf("%s = %d: Go's table says %q, want %q", e.name, e.value, names[e.value], want)
		}
		seen++
	}
	if seen != len(names) {
		t.Errorf("%s has %d values, Go's table %d names", enum, seen, len(names))
	}
}

func same(s string) string { return s }

// algoName is enums.go's spelling: a numbered algorithm keeps "ALGO_".
func algoName(s string) string {
	if _, err := strconv.Atoi(s); err == nil {
		return "ALGO_" + s
	}
	return s
}

// TestRealCudnnGoTables checks the Go codecs' cuDNN tables (enums.go,
// findkey.go, perf.go) against NVIDIA's real headers.
func TestRealCudnnGoTables(t *testing.T) {
	v := loadRealValues(t)
	enumTable(t, v, "cudnnConvolutionFwdAlgo_t", "CUDNN_CONVOLUTION_FWD_ALGO_", fwdAlgos, same)
	enumTable(t, v, "cudnnConvolutionBwdDataAlgo_t", "CUDNN_CONVOLUTION_BWD_DATA_ALGO_", bwdDataAlgos, algoName)
	enumTable(t, v, "cudnnConvolutionBwdFilterAlgo_t", "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_", bwdFilterAlgos, algoName)
	enumTable(t, v, "cudnnDataType_t", "CUDNN_DATA_", dataTypes, func(s string) string {
		if s == "BOOLEAN" {
			return "bool"
		}
		return strings.ToLower(s)
	})
	enumTable(t, v, "cudnnTensorFormat_t", "CUDNN_TENSOR_", formats, same)
	maths := []string{"default", "tensor-op", "tensor-op-conv", "fma"}
	for i, m := range maths {
		if got := MathType(i).String(); got != m {
			t.Fatalf("MathType(%d) = %q, want %q", i, got, m)
		}
	}
	enumTable(t, v, "cudnnMathType_t", "CUDNN_", maths, func(s string) string {
		return map[string]string{"DEFAULT_MATH": "default", "TENSOR_OP_MATH": "tensor-op",
			"TENSOR_OP_MATH_ALLOW_CONVERSION": "tensor-op-conv", "FMA_MATH": "fma"}[s]
	})
	// Conv.String: mode 0 "conv", 1 "xcorr".
	enumTable(t, v, "cudnnConvolutionMode_t", "CUDNN_", []string{"CONVOLUTION", "CROSS_CORRELATION"}, same)
	if got := (Conv{Mode: 1}).String(); !strings.Contains(got, " xcorr") {
		t.Errorf("Conv{Mode: CUDNN_CROSS_CORRELATION}.String() = %q", got)
	}
	// Perf.Format: determinism 0 is "nondeterministic".
	enumTable(t, v, "cudnnDeterminism_t", "CUDNN_", []string{"NON_DETERMINISTIC", "DETERMINISTIC"}, same)
	if v.defines["CUDNN_DIM_MAX"] != maxDims {
		t.Errorf("CUDNN_DIM_MAX = %d, findkey.go's maxDims %d", v.defines["CUDNN_DIM_MAX"], maxDims)
	}
	for _, e := range []string{"cudnnDataType_t", "cudnnMathType_t", "cudnnStatus_t"} {
		if v.sizeof[e] != 4 {
			t.Errorf("sizeof %s = %d; the codecs read 4 bytes", e, v.sizeof[e])
		}
	}
}

// TestRealCudnnPerfLayout decodes perf structs that a C program compiled
// against the real cudnn.h filled in, and checks every field.
func TestRealCudnnPerfLayout(t *testing.T) {
	v := loadRealValues(t)
	offsets := map[string]int64{"algo": 0, "status": 4, "time": 8, "memory": 16,
		"determinism": 24, "mathType": 28, "reserved": 32} // perf.go's layout
	for _, typ := range []string{"cudnnConvolutionFwdAlgoPerf_t", "cudnnConvolutionBwdDataAlgoPerf_t",
		"cudnnConvolutionBwdFilterAlgoPerf_t"} {
		if v.sizeof[typ] != PerfSize {
			t.Errorf("sizeof %s = %d, PerfSize %d", typ, v.sizeof[typ], PerfSize)
		}
		for f, off := range offsets {
			if got, ok := v.offsetof[typ+" "+f]; !ok || got != off {
				t.Errorf("offsetof(%s, %s) = %d, perf.go reads it at %d", typ, f, got, off)
			}
		}
		p, ok := DecodePerf(v.bytes[typ])
		want := Perf{Algo: 5, Status: int32(enumValue(t, v, "cudnnStatus_t", "CUDNN_STATUS_NOT_SUPPORTED")),
			Time: 1.5, Memory: 0x0102030405060708,
			Determinism: int32(enumValue(t, v, "cudnnDeterminism_t", "CUDNN_DETERMINISTIC")),
			MathType:    MathType(enumValue(t, v, "cudnnMathType_t", "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION")),
			Reserved:    [3]int32{7, 8, 9}}
		if !ok || p != want {
			t.Errorf("%s decoded as %+v (ok %v), want %+v", typ, p, ok, want)
		}
	}
}

func enumValue(t *testing.T, v *realValues, enum, name string) int64 {
	t.Helper()
	for _, e := range v.enums[enum] {
		if e.name == name {
			return e.value
		}
	}
	t.Fatalf("%s has no %s", enum, name)
	return 0
}

// TestRealCudnnStatusRange checks the interposer's rule for a cuDNN 9
// status (cudnn/preload/perf.c: 0, or CC_STATUS_V9_MIN..CC_STATUS_V9_MAX)
// against every cudnnStatus_t value of the real header.
func TestRealCudnnStatusRange(t *testing.T) {
	v := loadRealValues(t)
	src, err := os.ReadFile("preload/preload.h")
	if err != nil {
		t.Fatal(err)
	}
	bound := func(name string) int64 {
		m := regexp.MustCompile(`#define ` + name + ` (\d+)`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("preload.h defines no %s", name)
		}
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return n
	}
	lo, hi := bound("CC_STATUS_V9_MIN"), bound("CC_STATUS_V9_MAX")
	for _, e := range v.enums["cudnnStatus_t"] {
		if e.value != 0 && (e.value < lo || e.value > hi) {
			t.Errorf("%s = %d is outside the interposer's range %d..%d", e.name, e.value, lo, hi)
		}
	}
}
