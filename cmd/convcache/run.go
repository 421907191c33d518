package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/convcache/convcache/cache"
)

// Exit codes of convcache run when the command does not start, as env(1),
// nice(1) and timeout(1) use them. Once it starts, convcache run exits as
// the command does.
const (
	exitRunFailed   = 125 // convcache run itself failed: no interposer
	exitCannotExec  = 126 // the command was found but cannot be run
	exitCmdNotFound = 127 // the command was not found
)

// runOptions are convcache run's flags.
type runOptions struct {
	preload string
	path    string
	scope   string
	tag     string
	mode    string
	verbose bool
	quiet   bool
	torchV7 bool
}

// torchV7Note says what --torch-v7 costs. The interposer serves both of
// PyTorch's cuDNN paths; the switch is for those who want the legacy one.
const torchV7Note = "convcache run: --torch-v7 sets TORCH_CUDNN_V8_API_DISABLED=1: PyTorch takes its legacy cuDNN v7 path " +
	"and gives up the engine choices only its default v8 path has, so some layers may run slower; " +
	"convcache serves the default path without it"

func newRunCmd(e *env) *cobra.Command {
	var o runOptions
	c := &cobra.Command{
		Use:   "run [flags] [--] COMMAND [ARGS...]",
		Short: "run a command with the cuDNN interposer (LD_PRELOAD)",
		Long: `Runs COMMAND with the LD_PRELOAD interposer, libconvcache_preload.so, so that
its cuDNN convolution benchmarks are kept across runs, as ccache does for a
compiler: both PyTorch's default path (cuDNN's backend API, "v8": the
stored engine choice is the one plan timed) and the legacy find calls
("v7": answered from the cache). For PyTorch, set
torch.backends.cudnn.benchmark = True in the program: without it PyTorch
benchmarks nothing, and there is nothing to keep.

It adds the interposer to LD_PRELOAD (after any libraries already
there), sets the CONVCACHE_* variables its flags name, and then runs
COMMAND in its own place (exec): COMMAND gets every signal sent to it, and
its exit status is convcache run's (a shell reports 128+N for a command
killed by signal N). Flags come before COMMAND; everything from COMMAND on
is COMMAND's.

The interposer is --preload PATH, else the first that exists of
libconvcache_preload.so beside this convcache command (the build/ tree),
in ../lib, ../lib64 or ../lib/<multiarch> of its directory (an install in
PREFIX/bin and PREFIX/lib), and beside $CONVCACHE_LIBRARY. libconvcache.so.1
must be beside it.

When COMMAND has used cuDNN (made find calls or built convolution
graphs), one line on stderr at its exit says what the run got: graphs and
finds served from the cache, benchmarked and stored, stood aside (with the
most frequent reason), the benchmark time saved where known, and the cache
file. A process that never used cuDNN prints nothing. --quiet (or
CONVCACHE_QUIET=1) leaves the line out; --verbose adds a line per call and
per graph benchmarked, and the cache's event log (docs/interposer.md).

--torch-v7 also sets TORCH_CUDNN_V8_API_DISABLED=1, which puts PyTorch on
its legacy cuDNN v7 path; it is not needed for caching. A note on what it
costs is printed.

--path is checked before COMMAND starts: a directory, a file that cannot
be created or is not writable by you (unless --mode ro or off) is said in
one line, exit 2. What happens to the file later is the interposer's to
handle: it passes calls through to cuDNN with one warning.

Exit status when COMMAND does not start: 2 a bad flag or --path, 125 no interposer,
126 COMMAND cannot be run, 127 COMMAND not found.

Examples:
  convcache run -- python train.py
  convcache run --path /scratch/convcache.ccdb -- python train.py
  convcache run --mode strict -- ./serve   # fails a convolution that would benchmark`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return argErr(c, "name the command to run: convcache run [flags] -- COMMAND [ARGS...]")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error { return runCommand(e, c, &o, args) },
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveDefault
		},
	}
	fs := c.Flags()
	fs.SetInterspersed(false) // flags after COMMAND are COMMAND's
	fs.StringVar(&o.preload, "preload", "", "the interposer to use, `PATH` to libconvcache_preload.so")
	fs.StringVar(&o.path, "path", "", "the cache `FILE` (sets CONVCACHE_PATH)")
	fs.StringVar(&o.scope, "scope", "", "store every result under scope `S` instead of each device's fingerprint (sets CONVCACHE_SCOPE)")
	fs.StringVar(&o.tag, "tag", "", "append `T` to the fingerprint, such as your framework's version (sets CONVCACHE_TAG)")
	fs.StringVar(&o.mode, "mode", "", "`MODE`: rw, ro, off, recache or strict (sets CONVCACHE_MODE)")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "log every intercepted call, graph and cache event on stderr (sets CONVCACHE_PRELOAD_LOG=1 and CONVCACHE_VERBOSE=1)")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no report line at exit (sets CONVCACHE_QUIET=1)")
	fs.BoolVar(&o.torchV7, "torch-v7", false, "put PyTorch on its legacy cuDNN v7 API (sets TORCH_CUDNN_V8_API_DISABLED=1; not needed for caching)")
	c.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions(
		[]cobra.Completion{"rw", "ro", "off", "recache", "strict"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// runCommand replaces this process with the command, under the interposer.
// It returns only when the command cannot be started.
func runCommand(e *env, c *cobra.Command, o *runOptions, args []string) error {
	set, err := o.variables(c)
	if err != nil {
		return err
	}
	if o.path != "" {
		mode := libraryConfig(false).Cache.Mode
		if m, ok := cache.ParseMode(strings.ToLower(o.mode)); ok {
			mode = m
		}
		if _, err := unusableCache(o.path, mode); err != nil {
			return usageErr("--path: %v; %s was not started", err, args[0])
		}
	}
	preload, err := findPreload(o.preload)
	if err != nil {
		return err
	}
	ld, err := appendPreload(os.Getenv("LD_PRELOAD"), preload)
	if err != nil {
		return err
	}
	set = append(set, "LD_PRELOAD="+ld)
	prog, err := exec.LookPath(args[0])
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return withCode(exitCmdNotFound, "%s: command not found", args[0])
		}
		return withCode(exitCannotExec, "%s: %v", args[0], unwrapExec(err))
	}
	if o.torchV7 {
		fmt.Fprintln(e.stderr, torchV7Note)
	}
	err = syscall.Exec(prog, args, withEnv(os.Environ(), set))
	return withCode(exitCannotExec, "%s: cannot run it: %v", prog, err)
}

// variables returns the NAME=value settings the flags ask for.
func (o *runOptions) variables(c *cobra.Command) ([]string, error) {
	var set []string
	if o.path != "" {
		p, err := filepath.Abs(o.path) // the command may change directory
		if err != nil {
			return nil, argErr(c, "--path %q: %v", o.path, err)
		}
		set = append(set, "CONVCACHE_PATH="+p)
	}
	if c.Flags().Changed("scope") {
		if o.scope == "" || len(o.scope) > cache.MaxScopeSize {
			return nil, argErr(c, "--scope: give a name of 1 to %d bytes", cache.MaxScopeSize)
		}
		set = append(set, "CONVCACHE_SCOPE="+o.scope)
	}
	if o.tag != "" {
		set = append(set, "CONVCACHE_TAG="+o.tag)
	}
	if o.mode != "" {
		if _, ok := cache.ParseMode(strings.ToLower(o.mode)); !ok {
			return nil, argErr(c, "--mode %q: give rw, ro, off, recache or strict", o.mode)
		}
		set = append(set, "CONVCACHE_MODE="+strings.ToLower(o.mode))
	}
	if o.verbose {
		set = append(set, "CONVCACHE_PRELOAD_LOG=1", "CONVCACHE_VERBOSE=1")
	}
	switch {
	case o.quiet: // whatever CONVCACHE_REPORT the environment holds
		set = append(set, "CONVCACHE_QUIET=1")
	case os.Getenv("CONVCACHE_QUIET") != "1":
		set = append(set, "CONVCACHE_REPORT="+o.reportPath())
	}
	if o.torchV7 {
		set = append(set, "TORCH_CUDNN_V8_API_DISABLED=1")
	}
	return set, nil
}

// reportPath is the cache file the report names: --path, else the default
// one, as the library in the program resolves it.
func (o *runOptions) reportPath() string {
	p := o.path
	if p != "" {
		p, _ = filepath.Abs(p)
	}
	if r, err := resolve(p); err == nil {
		return r
	}
	if p == "" {
		return "the default cache file"
	}
	return p
}

// withEnv returns env with each NAME=value of set replacing any earlier
// value of NAME.
func withEnv(env, set []string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		replaced := false
		for _, s := range set {
			if strings.HasPrefix(s, name+"=") {
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

func unwrapExec(err error) error {
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}
