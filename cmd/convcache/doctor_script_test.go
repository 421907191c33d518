package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSplitCode(t *testing.T) {
	for _, c := range []struct{ line, noComment, code string }{
		{`x = 1  # a comment`, `x = 1  `, `x = 1  `},
		{`s = "a # b" # c`, `s = "a # b" `, `s = "     " `},
		{`s = 'it\'s # here'`, `s = 'it\'s # here'`, `s = '            '`},
		{`cudnn.benchmark = True`, `cudnn.benchmark = True`, `cudnn.benchmark = True`},
		{`"unterminated # still a string`, `"unterminated # still a string`, `"                             `},
	} {
		nc, code := splitCode(c.line)
		if nc != c.noComment || code != c.code {
			t.Errorf("splitCode(%q) = %q, %q; want %q, %q", c.line, nc, code, c.noComment, c.code)
		}
	}
}

func TestScanScript(t *testing.T) {
	src := strings.Join([]string{
		"import os, torch",
		"os.environ.setdefault('TORCH_CUDNN_V8_API_DISABLED', '1')",
		"torch.backends.cudnn.benchmark = True",
		"if torch.backends.cudnn.benchmark == True: pass",
		"torch.backends.cudnn.set_flags(True, _benchmark=False)",
		"msg = 'cudnn.benchmark = True'",
		"cudnn.benchmark = cfg['bench'];",
		"# torch.backends.cudnn.benchmark = True",
	}, "\n")
	s := scanScript("t.py", strings.NewReader(src))
	want := []assignment{{3, "True"}, {5, "False"}, {7, "cfg['bench']"}}
	if len(s.benchmark) != len(want) || s.v7Line != 2 || s.err != nil || s.truncated {
		t.Fatalf("%+v", s)
	}
	for i, a := range want {
		if s.benchmark[i] != a {
			t.Errorf("assignment %d: %+v, want %+v", i, s.benchmark[i], a)
		}
	}
	// Bounded: a long script is read up to maxScript, and says so.
	long := strings.Repeat("x = 1\n", maxScript/6+10)
	if s := scanScript("long.py", strings.NewReader(long)); !s.truncated || len(s.benchmark) != 0 {
		t.Fatalf("long script: truncated %v", s.truncated)
	}
	if f := scanScript("long.py", strings.NewReader(long)).benchmarkFinding(); f.Status != statusWarning || !strings.Contains(f.Summary, "only its first 4.0 MiB were read") {
		t.Fatalf("%+v", f)
	}
}

func TestInterpreterOf(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	torchrun := write("torchrun", "#!/opt/venv/bin/python3.12\nimport sys\n")
	envPython := write("launch", "#!/usr/bin/env python3\n")
	shell := write("train.sh", "#!/bin/sh\npython train.py\n")
	for _, c := range []struct {
		command []string
		want    string
	}{
		{[]string{"python", "train.py"}, "python"},
		{[]string{"/opt/venv/bin/python3.11", "-u", "train.py"}, "/opt/venv/bin/python3.11"},
		{[]string{torchrun, "--nproc_per_node", "8", "train.py"}, "/opt/venv/bin/python3.12"},
		{[]string{envPython}, "python3"},
		{[]string{shell}, ""},
		{[]string{filepath.Join(dir, "missing")}, ""},
		{nil, ""},
	} {
		if got := interpreterOf(c.command); got != c.want {
			t.Errorf("interpreterOf(%q) = %q, want %q", c.command, got, c.want)
		}
	}
	// The script is the first .py argument, or the -c code.
	py := write("train.py", "import torch\ntorch.backends.cudnn.benchmark = True\n")
	if s := scriptOf([]string{torchrun, "--nproc_per_node=8", py, "--lr", "0.1"}); s == nil || s.name != py || len(s.benchmark) != 1 {
		t.Fatalf("scriptOf: %+v", s)
	}
	if s := scriptOf([]string{"python", "-m", "mypkg.train"}); s != nil {
		t.Fatalf("python -m: %+v", s)
	}
	if s := scriptOf([]string{"python", filepath.Join(dir, "nope.py")}); s == nil || s.err == nil {
		t.Fatalf("a missing script: %+v", s)
	}
}
