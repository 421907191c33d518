package main

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Which cuDNN functions the interposer serves, which ones PyTorch imports,
// and where the dynamic loader binds them: read from the files themselves
// (their ELF dynamic symbol tables, .dynsym) and from the loader's own
// account (LD_DEBUG=bindings), never from what this command was built to
// expect. An interposer that starts exporting the backend functions serves
// the v8 path from then on, with no change here.

// pathFunctions are the cuDNN functions each of PyTorch's convolution
// paths calls to choose algorithms: the v7 path's six find functions, and
// the six functions of the backend API that the v8 path (cudnn_frontend)
// goes through.
var pathFunctions = map[string][]string{
	"v7": {
		"cudnnFindConvolutionForwardAlgorithm", "cudnnFindConvolutionForwardAlgorithmEx",
		"cudnnFindConvolutionBackwardDataAlgorithm", "cudnnFindConvolutionBackwardDataAlgorithmEx",
		"cudnnFindConvolutionBackwardFilterAlgorithm", "cudnnFindConvolutionBackwardFilterAlgorithmEx",
	},
	"v8": {
		"cudnnBackendCreateDescriptor", "cudnnBackendSetAttribute", "cudnnBackendGetAttribute",
		"cudnnBackendFinalize", "cudnnBackendExecute", "cudnnBackendDestroyDescriptor",
	},
}

// dynamicFunctions returns which of names the ELF file at path defines
// and exports (defined: true), or imports (defined: false), in its
// dynamic symbol table.
func dynamicFunctions(path string, names []string, defined bool) (found []string, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: not a shared library this command can read: %v", path, err)
	}
	defer f.Close()
	defer func() { // debug/elf reads a file anyone could have written
		if r := recover(); r != nil {
			found, err = nil, fmt.Errorf("%s: a malformed ELF file (%v)", path, r)
		}
	}()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, fmt.Errorf("%s: reading its dynamic symbols: %v", path, err)
	}
	for _, s := range syms {
		bind, typ := elf.ST_BIND(s.Info), elf.ST_TYPE(s.Info)
		if !slices.Contains(names, s.Name) || slices.Contains(found, s.Name) ||
			(bind != elf.STB_GLOBAL && bind != elf.STB_WEAK) {
			continue
		}
		isDefined := s.Section != elf.SHN_UNDEF
		if isDefined != defined || isDefined && typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC {
			continue
		}
		found = append(found, s.Name)
	}
	return found, nil
}

// servedPaths returns the paths whose every function the interposer
// defines.
func servedPaths(interposer string) (map[string]bool, error) {
	served := map[string]bool{}
	for path, names := range pathFunctions {
		got, err := dynamicFunctions(interposer, names, true)
		if err != nil {
			return nil, err
		}
		served[path] = len(got) == len(names)
	}
	return served, nil
}

// bindingReport is where the loader bound one function that a library
// imports.
type bindingReport struct {
	Function string   `json:"function"`
	To       []string `json:"to"` // the files it was bound to; none when no binding was logged
}

// checkBindings imports torch with py under the interposer, as convcache
// run would start it, with LD_BIND_NOW=1 (every import of libtorch_cuda.so
// is bound at load) and LD_DEBUG=bindings (the loader logs each binding),
// the check make torch-check makes (tests/torch/run.sh), and returns where
// each of funcs that module imports was bound. CONVCACHE_DISABLE=1 keeps
// the cache file out of it: an import makes no find call anyway.
func checkBindings(py string, env []string, interposer, module string, funcs []string) ([]bindingReport, error) {
	dir, err := os.MkdirTemp("", "convcache-doctor-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cur, _ := lookupEnv(env, "LD_PRELOAD")
	ld, err := appendPreload(cur, interposer)
	if err != nil {
		return nil, err
	}
	env = withEnv(env, []string{"LD_PRELOAD=" + ld, "LD_BIND_NOW=1", "LD_DEBUG=bindings",
		"LD_DEBUG_OUTPUT=" + filepath.Join(dir, "ld"), "CONVCACHE_DISABLE=1"})
	_, lastErr, runErr := runPython(py, bindingsScript, env)

	targets := map[string][]string{}
	same := sameFiles{}
	logs, _ := filepath.Glob(filepath.Join(dir, "ld.*"))
	for _, name := range logs {
		if err := scanBindings(name, func(from, to, fn string) {
			if slices.Contains(funcs, fn) && !slices.Contains(targets[fn], to) && same.is(from, module) {
				targets[fn] = append(targets[fn], to)
			}
		}); err != nil {
			return nil, err
		}
	}
	if runErr != nil && len(targets) == 0 {
		if lastErr != "" {
			return nil, fmt.Errorf("import torch under the interposer failed: %v (%s)", runErr, lastErr)
		}
		return nil, fmt.Errorf("import torch under the interposer failed: %v", runErr)
	}
	out := make([]bindingReport, 0, len(funcs))
	for _, fn := range funcs {
		out = append(out, bindingReport{Function: fn, To: targets[fn]})
	}
	return out, nil
}

// scanBindings calls f for each line of an LD_DEBUG=bindings log of the
// form "PID: binding file FROM [N] to TO [N]: normal symbol `NAME' [VERSION]".
func scanBindings(name string, f func(from, to, fn string)) error {
	file, err := os.Open(name)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		_, rest, ok := strings.Cut(line, "binding file ")
		if !ok {
			continue
		}
		from, rest, ok1 := strings.Cut(rest, " [")
		_, rest, ok2 := strings.Cut(rest, "] to ")
		to, rest, ok3 := strings.Cut(rest, " [")
		_, rest, ok4 := strings.Cut(rest, "symbol `")
		fn, _, ok5 := strings.Cut(rest, "'")
		if ok1 && ok2 && ok3 && ok4 && ok5 {
			f(from, to, fn)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the loader's log %s: %v", name, err)
	}
	return nil
}

// sameFiles tells whether two paths name one file (the loader logs the
// path it opened, "/a/b/../c/x.so" included), remembering what it stat'ed.
type sameFiles map[string]os.FileInfo

func (s sameFiles) is(a, b string) bool {
	if a == b {
		return true
	}
	fa, fb := s.stat(a), s.stat(b)
	return fa != nil && fb != nil && os.SameFile(fa, fb)
}

func (s sameFiles) stat(p string) os.FileInfo {
	if fi, ok := s[p]; ok {
		return fi
	}
	fi, err := os.Stat(p)
	if err != nil {
		fi = nil
	}
	s[p] = fi
	return fi
}
