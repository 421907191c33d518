package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// What convcache doctor learns from the program's Python interpreter: it
// runs doctor_probe.py there (PY -c), in the environment the program would
// get, and reads the one line the probe prints.

//go:embed doctor_probe.py
var probeScript string

// bindingsScript is what the binding check runs under the interposer, as
// make torch-check does (tests/torch/run.sh): an import of torch, which
// loads libtorch_cuda.so and, under LD_BIND_NOW=1, binds every function it
// imports.
const bindingsScript = "# convcache doctor: bindings\nimport torch\n"

// pythonTimeout bounds each run of the interpreter: importing a CUDA build
// of torch reads a few gigabytes of libraries, on a cold network file
// system too.
const pythonTimeout = 3 * time.Minute

// probeMarker starts the probe's line.
const probeMarker = "CONVCACHE_DOCTOR "

// torchProbe is what the probe reports (doctor_probe.py).
type torchProbe struct {
	Python        string `json:"python"`
	Executable    string `json:"executable"`
	TorchMissing  bool   `json:"torch_missing,omitempty"`
	TorchError    string `json:"torch_error,omitempty"`
	Torch         string `json:"torch,omitempty"`
	CUDA          string `json:"cuda,omitempty"`
	CuDNN         int64  `json:"cudnn,omitempty"`
	CuDNNEnabled  *bool  `json:"cudnn_enabled,omitempty"`
	CuDNNError    string `json:"cudnn_error,omitempty"`
	Benchmark     *bool  `json:"benchmark,omitempty"`
	CUDAAvailable *bool  `json:"cuda_available,omitempty"`
	TorchCUDA     string `json:"torch_cuda_library,omitempty"`
	CuDNNLibrary  string `json:"cudnn_library,omitempty"`
}

// runPython runs the interpreter on script with env (writing no bytecode
// files), bounded by pythonTimeout, and returns its standard output and the last line of its
// standard error (for the message when it fails).
func runPython(py, script string, env []string) (stdout []byte, lastErr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), pythonTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", script)
	cmd.Env = withEnv(env, []string{"PYTHONDONTWRITEBYTECODE=1"}) // the doctor changes nothing
	cmd.Stdin = nil
	cmd.WaitDelay = 5 * time.Second
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limitedBuffer{b: &so, n: 1 << 20}, &limitedBuffer{b: &se, n: 1 << 20}
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("it did not finish within %v", pythonTimeout)
	}
	lines := strings.Split(strings.TrimSpace(se.String()), "\n")
	return so.Bytes(), safeText(strings.TrimSpace(lines[len(lines)-1])), err
}

// probeTorch runs the probe with py. It fails when py cannot be run or
// the probe printed no report.
func probeTorch(py string, env []string) (*torchProbe, error) {
	out, lastErr, err := runPython(py, probeScript, env)
	var p torchProbe
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	found := false
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), probeMarker); ok {
			found = json.Unmarshal([]byte(line), &p) == nil
		}
	}
	switch {
	case found:
		return &p, nil
	case err != nil && lastErr != "":
		return nil, fmt.Errorf("%v (%s)", err, lastErr)
	case err != nil:
		return nil, err
	}
	return nil, errors.New("it printed no report: is it a Python interpreter?")
}

// torchPath is the cuDNN convolution path PyTorch takes: "v8", its
// default (cudnn_frontend, the backend API), or "v7" (the legacy find
// functions) when TORCH_CUDNN_V8_API_DISABLED is "1" when the first
// convolution runs. PyTorch reads the variable with c10::utils::check_env,
// which takes "1" for true, "0" for false, and ignores any other value
// with a warning.
type torchPath struct {
	Name   string // "v7" or "v8"
	Why    string // what decided it
	Ignore string // a value PyTorch ignores, or ""
}

func decidePath(env []string, script *scriptFacts) torchPath {
	v, set := lookupEnv(env, torchV7Var)
	switch {
	case v == "1":
		return torchPath{Name: "v7", Why: torchV7Var + "=1 in the environment"}
	case script != nil && script.v7Line > 0 && !set:
		return torchPath{Name: "v7", Why: fmt.Sprintf("%s sets %s=1 at line %d (read from the script: if that runs before the first convolution)", script.name, torchV7Var, script.v7Line)}
	case set && v != "0":
		return torchPath{Name: "v8", Why: "PyTorch's default", Ignore: v}
	}
	return torchPath{Name: "v8", Why: "PyTorch's default"}
}

const torchV7Var = "TORCH_CUDNN_V8_API_DISABLED"

// lookupEnv is os.LookupEnv over env: the last value of name.
func lookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// limitedBuffer keeps the first n bytes written to it and drops the rest:
// a program's output is not ours to hold without bound.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// environ is this process's environment with set applied.
func environ(set ...string) []string { return withEnv(os.Environ(), set) }
