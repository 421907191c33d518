package main

import (
	"fmt"
	"regexp"
)

// The other way to serve a Python program: convcache.enable() in its own
// script, before it imports torch (python/convcache/_enable.py). The
// doctor reads the script for the call and for the first import of torch
// (the same heuristic as for cudnn.benchmark: one file, not run).

var (
	// convcache.enable(), convcache.enable(path=...).
	enableCall = regexp.MustCompile(`\bconvcache\s*\.\s*enable\s*\(`)
	// import torch, import torch.nn as nn, from torch import nn, import os, torch.
	torchImport = regexp.MustCompile(`^\s*(import\s+([\w.]+\s*,\s*)*torch\b|from\s+torch\b)`)
)

// enableFinding says whether the script switches convcache on itself, and
// whether in time; ok is false when it does not call convcache.enable().
func (s *scriptFacts) enableFinding() (f finding, ok bool) {
	if s == nil || s.enable == 0 {
		return finding{}, false
	}
	const heuristic = "read from the script, a heuristic"
	if s.torch != 0 && s.torch < s.enable {
		return finding{"interposer", statusWarning,
			fmt.Sprintf("%s calls convcache.enable() at line %d, after it imports torch at line %d: cuDNN is loaded by then, so enable() only warns and nothing is served (%s)",
				safeText(s.name), s.enable, s.torch, heuristic),
			"move convcache.enable() above import torch, or run the program under convcache run"}, true
	}
	where := "before it imports torch"
	if s.torch != 0 {
		where = fmt.Sprintf("before it imports torch at line %d", s.torch)
	}
	return finding{"interposer", statusOK,
		fmt.Sprintf("%s calls convcache.enable() at line %d, %s: the process is served without convcache run (%s)",
			safeText(s.name), s.enable, where, heuristic),
		"convcache run is not needed for it; the CONVCACHE_* variables still apply, and a library that opens cuDNN with dlopen (ONNX Runtime) needs convcache run"}, true
}
