package main

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// convcache doctor: what convcache run would do for a program, and what
// stands in the way. Each check is a finding with a status and one line of
// advice; the checks live beside it (doctor_cache.go: the cache file and
// the scope; doctor_torch.go: the Python interpreter and PyTorch's path;
// doctor_symbols.go: what the interposer serves and where the loader binds
// torch's functions; doctor_script.go: the program's script).

// A finding's status.
const (
	statusOK      = "ok"      // as it should be
	statusNote    = "note"    // worth knowing; nothing in the way
	statusWarning = "warning" // may stand in the way: the doctor cannot tell, or it costs something
	statusProblem = "problem" // stands in the way: the program's benchmarks would not be cached
)

type finding struct {
	Check   string `json:"check"` // mode, cache, scope, interposer, python, torch, path, benchmark, bindings
	Status  string `json:"status"`
	Summary string `json:"summary"`
	Advice  string `json:"advice"`
}

type doctorReport struct {
	Command    []string        `json:"command"`
	CachePath  string          `json:"cache_path"`
	Interposer string          `json:"interposer,omitempty"`
	Serves     map[string]bool `json:"serves,omitempty"` // "v7", "v8": paths the interposer serves
	Python     string          `json:"python,omitempty"`
	Torch      *torchProbe     `json:"torch,omitempty"`
	Path       string          `json:"torch_path,omitempty"` // the cuDNN path torch takes: v7, v8
	Bindings   []bindingReport `json:"bindings,omitempty"`
	Findings   []finding       `json:"findings"`
	Problems   int             `json:"problems"`

	runFlags []string // convcache run's flags that match the doctor's
}

type doctorOptions struct {
	python  string
	preload string
	path    string
	torchV7 bool
	json    bool
}

func newDoctorCmd(e *env) *cobra.Command {
	var o doctorOptions
	c := &cobra.Command{
		Use:   "doctor [--python PY] [--preload PATH] [--path FILE] [--torch-v7] [--json] [-- COMMAND [ARGS...]]",
		Short: "say what convcache run would do for a program, and what stands in the way",
		Long: `Checks what convcache run would do for a program, and prints each finding
(ok, note, warning or problem) with one line of advice:

  - the cache file (--path FILE, else the default) and its state, and the
    mode the environment sets;
  - this machine's scope for each GPU (its model, driver and cuDNN, read from
    the cuDNN that torch loads) and how many entries the file holds for it;
  - the interposer convcache run would use (--preload, else where run looks)
    and which of PyTorch's cuDNN paths it serves, read from the functions it
    exports: v7 (the cudnnFind* functions) and v8 (the cudnnBackend*
    functions);
  - for a PyTorch program (--python PY, else the command's own interpreter,
    else python3): torch's version, its CUDA and cuDNN, and the path it
    takes: v8 by default, v7 when TORCH_CUDNN_V8_API_DISABLED=1 (--torch-v7
    sets it, as convcache run --torch-v7 does), and whether convcache run
    serves it;
  - that the program must set torch.backends.cudnn.benchmark = True, since
    PyTorch's default is False and nothing is benchmarked or cached without
    it. Given the program (convcache doctor -- python train.py), the doctor
    reads its script for the assignment: a heuristic, and it says so;
  - whether torch's references to the functions of its path bind to the
    interposer: the check make torch-check makes, an import of torch under
    the interposer with LD_BIND_NOW=1 and LD_DEBUG=bindings.

Each of these is a problem: no CUDA driver or GPU here (no device
fingerprint: the interposer passes every call through), a script that
does not set benchmark mode (read from the script even when torch is not
importable here), a cache path the program could not use (a directory,
not writable, cannot be created), an interposer that cannot be found.

Exit status: 0 when nothing stands in the way (warnings and notes
included: "Nothing stands in the way" is printed only then), 1 when a
problem does, 2 for a bad flag. The doctor changes
nothing: it reads the cache file, imports torch and exits.

Examples:
  convcache doctor -- python train.py
  convcache doctor --python venv/bin/python --torch-v7`,
		RunE: func(c *cobra.Command, args []string) error { return runDoctor(e, c, &o, args) },
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveDefault
		},
	}
	fs := c.Flags()
	fs.SetInterspersed(false) // flags after COMMAND are COMMAND's
	fs.StringVar(&o.python, "python", "", "the program's Python interpreter `PY` (default: the command's own, else python3)")
	fs.StringVar(&o.preload, "preload", "", "the interposer, `PATH` to libconvcache_preload.so (as convcache run's --preload)")
	fs.StringVar(&o.path, "path", "", "the cache `FILE` the program would use (as convcache run's --path)")
	fs.BoolVar(&o.torchV7, "torch-v7", false, "check PyTorch's v7 path, as convcache run --torch-v7 starts it")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	return c
}

func runDoctor(e *env, c *cobra.Command, o *doctorOptions, command []string) error {
	r := doctorReport{Command: command, Findings: []finding{}}
	if r.Command == nil {
		r.Command = []string{}
	}
	env := environ()
	if o.torchV7 {
		env = environ(torchV7Var + "=1")
		r.runFlags = append(r.runFlags, "--torch-v7")
	}
	if o.preload != "" {
		r.runFlags = append(r.runFlags, "--preload", o.preload)
	}
	if o.path != "" {
		r.runFlags = append(r.runFlags, "--path", o.path)
	}
	path := o.path
	if path != "" {
		p, err := filepath.Abs(path)
		if err != nil {
			return argErr(c, "--path %q: %v", path, err)
		}
		path = p
	}
	// A path the program could not use is a finding, not the doctor's error.
	path, unusable := unusableCache(path, libraryConfig(false).Cache.Mode)
	r.CachePath = path
	script := scriptOf(command)
	if f, ok := script.enableFinding(); ok {
		r.add(f)
	}

	// The interposer.
	interposer, err := findPreload(o.preload)
	if err == nil {
		r.Interposer = interposer
		r.Serves, err = servedPaths(interposer)
	}
	if err != nil {
		r.add(finding{"interposer", statusProblem, message(err),
			"without it convcache run cannot start the program (it exits 125)"})
	} else {
		r.add(finding{"interposer", statusOK, fmt.Sprintf("%s serves %s", interposer, servesText(r.Serves)),
			"convcache run adds it to LD_PRELOAD; libconvcache.so.1 beside it holds the cache"})
	}

	// PyTorch, through the program's interpreter.
	torchCUDNN := ""
	if py, explicit := pythonFor(o.python, command); py != "" {
		r.Python = py
		torchCUDNN = r.checkTorch(py, explicit, env, script)
		if script != nil { // read even when torch cannot be asked
			r.add(script.benchmarkFinding())
		}
	} else {
		r.add(finding{"python", statusNote, fmt.Sprintf("%s is not a Python program: the PyTorch checks are skipped", safeText(command[0])),
			"give --python PY if it runs PyTorch through another interpreter; convcache run caches the cudnnFind* calls of any program"})
	}

	// The cache file, and this machine's scopes in it.
	cf, file := cacheFindings(path, unusable)
	r.add(cf...)
	r.add(scopeFindings(file, torchCUDNN)...)
	slices.SortStableFunc(r.Findings, func(a, b finding) int { return checkRank(a.Check) - checkRank(b.Check) })

	if o.json {
		if err := writeJSON(e.stdout, r); err != nil {
			return err
		}
	} else {
		r.print(e.stdout)
	}
	if r.Problems > 0 {
		return quietErr{exitDamage}
	}
	return nil
}

// checkOrder is the order findings are printed in.
var checkOrder = []string{"mode", "cache", "scope", "interposer", "python", "torch", "path", "benchmark", "bindings"}

func checkRank(check string) int { return slices.Index(checkOrder, check) }

func (r *doctorReport) add(fs ...finding) {
	for _, f := range fs {
		if f.Status == statusProblem {
			r.Problems++
		}
		r.Findings = append(r.Findings, f)
	}
}

// pythonFor returns the interpreter to ask about torch: --python, else the
// command's own, else python3 when no command is given (explicit false: its
// absence only skips the PyTorch checks); "" for a command that is not a
// Python program.
func pythonFor(flag string, command []string) (py string, explicit bool) {
	switch {
	case flag != "":
		return flag, true
	case len(command) == 0:
		return "python3", false
	}
	return interpreterOf(command), true
}

// checkTorch adds the findings about PyTorch and returns the path of the
// cuDNN library torch loaded ("" when unknown).
func (r *doctorReport) checkTorch(py string, explicit bool, env []string, script *scriptFacts) string {
	if _, err := exec.LookPath(py); err != nil {
		if !explicit {
			r.add(finding{"python", statusNote, "no python3 here: the PyTorch checks are skipped",
				"give --python PY with the interpreter of a PyTorch program"})
			return ""
		}
		r.add(finding{"python", statusProblem, fmt.Sprintf("%s: %v", py, unwrapExec(err)),
			"give --python with the interpreter the program runs"})
		return ""
	}
	p, err := probeTorch(py, env)
	if err != nil {
		r.add(finding{"python", statusProblem, fmt.Sprintf("%s could not be asked about torch: %v", py, err),
			"give --python with the interpreter the program runs"})
		return ""
	}
	r.Torch = p
	who := fmt.Sprintf("%s (Python %s)", py, safeText(p.Python))
	switch {
	case p.TorchMissing:
		r.add(finding{"torch", statusNote, who + " has no torch: the PyTorch checks are skipped",
			"give --python with the interpreter that has torch (a venv's bin/python); for a program that calls cuDNN itself, convcache run caches its cudnnFind* calls"})
		return ""
	case p.TorchError != "":
		r.add(finding{"torch", statusProblem, fmt.Sprintf("%s cannot import torch: %s", who, safeText(p.TorchError)),
			"repair the torch install of that interpreter"})
		return ""
	case p.CUDA == "" || p.TorchCUDA == "":
		r.add(finding{"torch", statusProblem, fmt.Sprintf("%s: torch %s is a CPU-only build: it never calls cuDNN", who, safeText(p.Torch)),
			"install a CUDA build of torch"})
		return ""
	case p.CuDNN == 0 || p.CuDNNEnabled != nil && !*p.CuDNNEnabled:
		why := "it has no cuDNN"
		if p.CuDNNError != "" {
			why = "its cuDNN cannot be read: " + safeText(p.CuDNNError)
		} else if p.CuDNN != 0 {
			why = "torch.backends.cudnn.enabled is False"
		}
		r.add(finding{"torch", statusProblem, fmt.Sprintf("%s: torch %s (CUDA %s): %s", who, safeText(p.Torch), safeText(p.CUDA), why),
			"install a torch build with cuDNN, and leave torch.backends.cudnn.enabled True"})
		return ""
	}
	f := finding{"torch", statusOK, fmt.Sprintf("%s: torch %s (CUDA %s), cuDNN %d (%s)", who, safeText(p.Torch), safeText(p.CUDA), p.CuDNN, safeText(p.CuDNNLibrary)),
		"convcache run -- " + py + " ... starts it under the interposer"}
	if p.CUDAAvailable != nil && !*p.CUDAAvailable {
		f.Summary += "; it sees no GPU here"
		f.Advice = "run convcache doctor where the program runs, with its GPUs, for the device checks"
	}
	r.add(f)

	// The path torch takes, and whether convcache run serves it.
	tp := decidePath(env, script)
	if slices.Contains(r.runFlags, "--torch-v7") {
		tp.Why = "--torch-v7 sets " + torchV7Var + "=1, as convcache run --torch-v7 does"
	}
	r.Path = tp.Name
	if tp.Ignore != "" {
		r.add(finding{"path", statusWarning, fmt.Sprintf("%s=%s is ignored by PyTorch, which takes only 1 (and 0)", torchV7Var, safeText(tp.Ignore)),
			"set it to 1 for the v7 path, or unset it"})
	}
	r.add(r.pathFinding(tp))

	// torch.backends.cudnn.benchmark (the script's is read in runDoctor).
	switch {
	case script != nil:
	case p.Benchmark != nil && *p.Benchmark:
		r.add(finding{"benchmark", statusOK, "torch.backends.cudnn.benchmark is True when torch is imported here",
			"keep it True in the program: without it nothing is benchmarked or cached"})
	default:
		r.add(finding{"benchmark", statusWarning,
			"the program must set torch.backends.cudnn.benchmark = True: PyTorch's default is False, and without it nothing is benchmarked or cached",
			"set it before the first convolution; give the program (convcache doctor -- python train.py) to have its script checked"})
	}

	if r.Interposer != "" {
		r.add(r.bindingsFinding(py, env, p.TorchCUDA, tp.Name))
	}
	return p.CuDNNLibrary
}

func (r *doctorReport) pathFinding(tp torchPath) finding {
	fns := "the cudnnBackend* functions"
	if tp.Name == "v7" {
		fns = "the cudnnFind* functions"
	}
	what := fmt.Sprintf("PyTorch takes its cuDNN %s path (%s; %s)", tp.Name, tp.Why, fns)
	switch {
	case r.Interposer == "":
		return finding{"path", statusNote, what, "convcache run needs the interposer: see above"}
	case r.Serves[tp.Name] && tp.Name == "v7":
		return finding{"path", statusOK, what + ": convcache run caches its benchmarks",
			"v7 gives up the engine choices only v8 has: compare a warm run's speed with PyTorch's default"}
	case r.Serves[tp.Name]:
		return finding{"path", statusOK, what + ": convcache run caches its engine choices", "nothing to do"}
	case r.Serves["v7"]:
		return finding{"path", statusProblem, what + ": the interposer does not serve it, so nothing would be cached",
			"run it with convcache run --torch-v7 (TORCH_CUDNN_V8_API_DISABLED=1, the v7 path, which it serves); convcache doctor --torch-v7 checks that path"}
	}
	return finding{"path", statusProblem, what + ": the interposer serves neither path", "rebuild the interposer (make)"}
}

func (r *doctorReport) bindingsFinding(py string, env []string, module, path string) finding {
	funcs, err := dynamicFunctions(module, pathFunctions[path], false)
	if err != nil {
		return finding{"bindings", statusWarning, "cannot read what torch imports: " + err.Error(), "report this output"}
	}
	name := filepath.Base(module)
	if len(funcs) == 0 {
		return finding{"bindings", statusProblem, fmt.Sprintf("%s imports none of the %s functions: no interposer can see its calls", name, path),
			"this torch build links cuDNN another way; report it with this output"}
	}
	bs, err := checkBindings(py, env, r.Interposer, module, funcs)
	if err != nil {
		return finding{"bindings", statusWarning, "the binding check could not run: " + err.Error(), "run make torch-check, or report this output"}
	}
	r.Bindings = bs
	var unlogged, targets []string
	elsewhere := map[string]int{} // file: references bound to it
	same := sameFiles{}
	for _, b := range bs {
		if len(b.To) == 0 {
			unlogged = append(unlogged, b.Function)
		}
		for _, to := range b.To {
			if !same.is(to, r.Interposer) {
				if elsewhere[to] == 0 {
					targets = append(targets, to)
				}
				elsewhere[to]++
			}
		}
	}
	var where []string
	for _, to := range targets {
		where = append(where, fmt.Sprintf("%d to %s", elsewhere[to], filepath.Clean(to)))
	}
	how := "(import torch under the interposer, LD_BIND_NOW=1, LD_DEBUG=bindings, as make torch-check checks)"
	switch {
	case len(elsewhere) == 0 && len(unlogged) == 0:
		return finding{"bindings", statusOK, fmt.Sprintf("%s's %d references to the %s functions all bind to the interposer %s", name, len(bs), path, how),
			"nothing to do"}
	case len(elsewhere) > 0 && !r.Serves[path]:
		return finding{"bindings", statusNote, fmt.Sprintf("%s's references to the %s functions bind to cuDNN, since the interposer does not define them: %s", name, path, strings.Join(where, ", ")),
			"see the path finding"}
	case len(elsewhere) > 0:
		return finding{"bindings", statusProblem, fmt.Sprintf("%s's references to the %s functions bypass the interposer %s: %s", name, path, how, strings.Join(where, ", ")),
			"something binds them first (a library loaded with RTLD_DEEPBIND, or a cuDNN linked into torch); report it with this output"}
	}
	return finding{"bindings", statusWarning, fmt.Sprintf("the loader logged no binding of %s by %s %s", strings.Join(unlogged, ", "), name, how),
		"this C library may not support LD_DEBUG; run make torch-check on a glibc system"}
}

func servesText(s map[string]bool) string {
	switch {
	case s["v7"] && s["v8"]:
		return "PyTorch's v7 path (the cudnnFind* functions) and its v8 path (the cudnnBackend* functions)"
	case s["v7"]:
		return "PyTorch's v7 path (the cudnnFind* functions), not its v8 path (it exports no cudnnBackend* functions)"
	case s["v8"]:
		return "PyTorch's v8 path (the cudnnBackend* functions), not its v7 path"
	}
	return "neither of PyTorch's paths"
}

// print writes the findings, each with its advice, and a last line.
func (r *doctorReport) print(w io.Writer) {
	what := "a program here (give it after -- to have its script checked)"
	if len(r.Command) > 0 {
		what = safeText(strings.Join(r.Command, " "))
	}
	fmt.Fprintf(w, "convcache doctor: what convcache run would do for %s\n\n", what)
	for _, f := range r.Findings {
		fmt.Fprintf(w, "%-9s %s: %s\n%-9s advice: %s\n", "["+f.Status+"]", f.Check, f.Summary, "", f.Advice)
	}
	fmt.Fprintln(w)
	switch {
	case r.Problems > 0:
		fmt.Fprintf(w, "%s in the way of caching: see the advice above.\n", plural(r.Problems, "problem stands", "problems stand"))
	default:
		command := "COMMAND"
		if len(r.Command) > 0 {
			command = strings.Join(r.Command, " ")
		}
		fmt.Fprintf(w, "Nothing stands in the way: %s\n", safeText(strings.Join(append(append([]string{"convcache run"}, r.runFlags...), "--", command), " ")))
	}
}
