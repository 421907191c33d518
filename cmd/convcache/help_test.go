package main

import (
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/convcache/convcache/cache"
)

// subcommands lists the commands the help must name, each with a flag it
// must document.
var subcommands = map[string]string{
	"stats": "--json", "ls": "--scope S", "dump": "--json", "verify": "--strict",
	"compact": "--lock-timeout D", "prune": "--older-than D", "merge": "-o, --output", "export": "-o, --output",
	"import": "--cache", "scope": "--device N", "run": "--preload PATH", "doctor": "--python PY", "version": "--json",
	"completion": "--help", "help": "--help", "config": "--cmakedir",
}

func TestNoArguments(t *testing.T) {
	r := mustRun(t, exitUsage, nil)
	if r.stdout != "" || !strings.Contains(r.stderr, "usage: convcache COMMAND") {
		t.Fatalf("no arguments: stdout %q stderr %q", r.stdout, r.stderr)
	}
}

// Top-level help lists every command, on stdout, whichever way it is asked.
func TestHelpLists(t *testing.T) {
	var first string
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		r := mustRun(t, exitOK, nil, args...)
		if r.stderr != "" {
			t.Errorf("%v wrote to stderr: %q", args, r.stderr)
		}
		for name := range subcommands {
			if !regexp.MustCompile(`(?m)^  ` + name + ` +\S`).MatchString(r.stdout) {
				t.Errorf("%v lacks the command %s:\n%s", args, name, r.stdout)
			}
		}
		if first == "" {
			first = r.stdout
		} else if r.stdout != first {
			t.Errorf("%v differs from help", args)
		}
	}
	if !strings.Contains(first, "exit codes: 0 ok, 1 damage found (doctor: a problem found), 2 usage") {
		t.Errorf("help lacks the exit codes:\n%s", first)
	}
}

// help CMD, CMD --help and CMD -h print the same help, the command's own,
// on stdout, and exit 0.
func TestHelpCommand(t *testing.T) {
	for name, flag := range subcommands {
		r := mustRun(t, exitOK, nil, "help", name)
		if r.stderr != "" || !strings.HasPrefix(r.stdout, "convcache "+name+": ") ||
			!strings.Contains(r.stdout, "usage: convcache "+name) || !strings.Contains(r.stdout, flag) {
			t.Errorf("help %s: stdout %q stderr %q", name, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout, "commands:\n  stats") {
			t.Errorf("help %s printed the top-level help", name)
		}
		for _, h := range []string{"--help", "-h"} {
			if name == "help" {
				continue
			}
			rh := mustRun(t, exitOK, nil, name, h)
			if rh.stdout != r.stdout || rh.stderr != "" {
				t.Errorf("%s %s differs from help %s:\n%s", name, h, name, rh.stdout)
			}
		}
	}
	r := mustRun(t, exitUsage, nil, "help", "frobnicate")
	if r.stdout != "" || !strings.HasPrefix(r.stderr, `convcache help: no command "frobnicate"`) {
		t.Fatalf("help of an unknown command: %q %q", r.stdout, r.stderr)
	}
}

// Each flag has one spelling in the help (--json, never -json), and a
// default is printed once.
func TestHelpFlagSpelling(t *testing.T) {
	singleDashLong := regexp.MustCompile(`(^|[\s\[(,])-[a-z][a-z-]+`)
	for name := range subcommands {
		r := mustRun(t, exitOK, nil, "help", name)
		if m := singleDashLong.FindString(r.stdout); m != "" && name != "completion" {
			t.Errorf("help %s spells a long flag with one dash (%q):\n%s", name, m, r.stdout)
		}
		for _, line := range strings.Split(r.stdout, "\n") {
			if n := strings.Count(strings.ToLower(line), "default"); n > 1 {
				t.Errorf("help %s: a default printed twice: %q", name, line)
			}
		}
	}
	r := mustRun(t, exitOK, []string{"CONVCACHE_LOCK_TIMEOUT_MS=1500"}, "help", "compact")
	if !strings.Contains(r.stdout, "(default 1.5s)") {
		t.Errorf("the lock timeout default does not follow CONVCACHE_LOCK_TIMEOUT_MS:\n%s", r.stdout)
	}
}

// A wrong flag or argument: one line in the tool's words, then the usage,
// on stderr; exit 2; nothing on stdout.
func TestUsageErrors(t *testing.T) {
	path := sampleCache(t)
	for _, c := range []struct {
		args []string
		line string
	}{
		{[]string{"frobnicate"}, `convcache: unknown command "frobnicate"`},
		{[]string{"stat"}, `convcache: unknown command "stat" (did you mean stats?)`},
		{[]string{"--frob"}, `convcache: unknown flag --frob`},
		{[]string{"stats", "--no-such-flag"}, `convcache stats: unknown flag --no-such-flag`},
		{[]string{"ls", path, "-json"}, `convcache ls: unknown flag -json: a long flag takes two dashes, --json`},
		{[]string{"ls", "-x"}, `convcache ls: unknown flag -x`},
		{[]string{"ls", "--scope"}, `convcache ls: --scope needs a value`},
		{[]string{"compact", path, "--lock-timeout", "soon"}, `convcache compact: --lock-timeout "soon": give a duration such as 500ms, 10s or 2m`},
		{[]string{"scope", "--device", "x"}, `convcache scope: --device "x": not a whole number`},
		{[]string{"stats", "a", "b"}, `convcache stats: too many arguments ["a" "b"]: give at most one cache file`},
		{[]string{"scope", "extra"}, `convcache scope: unexpected argument "extra"`},
		{[]string{"prune", path}, `convcache prune: say what to prune: --scope, --keep-scope, --older-than or --max-bytes`},
		{[]string{"prune", path, "--older-than", "soon"}, `convcache prune: --older-than "soon": give a positive duration such as 90m, 36h, 30d or 2w`},
		{[]string{"merge", path}, `convcache merge: give the inputs and the output: convcache merge A B... -o OUT`},
		{[]string{"run"}, `convcache run: name the command to run: convcache run [flags] -- COMMAND [ARGS...]`},
		{[]string{"run", "--mode", "fast", "--", "true"}, `convcache run: --mode "fast": give rw, ro, off, recache or strict`},
		{[]string{"completion", "tcsh"}, `convcache completion: unknown shell "tcsh": give bash, zsh or fish`},
		{[]string{"version", "now"}, `convcache version: unexpected argument "now"`},
	} {
		r := mustRun(t, exitUsage, nil, c.args...)
		lines := strings.Split(r.stderr, "\n")
		if r.stdout != "" || lines[0] != c.line || len(lines) < 2 || !strings.HasPrefix(lines[1], "usage: convcache") {
			t.Errorf("convcache %s:\nstdout %q\nstderr %q\nwant the line %q, then the usage", strings.Join(c.args, " "), r.stdout, r.stderr, c.line)
		}
		if strings.Contains(r.stderr, "Error:") || strings.Contains(r.stderr, "flag provided but not defined") {
			t.Errorf("convcache %s: a library's own words: %q", strings.Join(c.args, " "), r.stderr)
		}
	}
}

// --version and version print the library version from the header, the
// Go version and the file format version.
func TestVersion(t *testing.T) {
	h, err := os.ReadFile("../../include/convcache.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#define CONVCACHE_VERSION_STRING "(.*)"$`).FindSubmatch(h)
	if m == nil {
		t.Fatal("no CONVCACHE_VERSION_STRING in include/convcache.h")
	}
	want := "convcache " + string(m[1]) + " (file format " + strconv.Itoa(cache.FormatVersion) + ", " +
		runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if r := mustRun(t, exitOK, nil, args...); r.stdout != want || r.stderr != "" {
			t.Errorf("%v: %q, want %q (if the header changed, run go generate ./cmd/convcache)", args, r.stdout, want)
		}
	}
	var v versionJSON
	decodeJSON(t, mustRun(t, exitOK, nil, "version", "--json").stdout, &v)
	if v.Version != string(m[1]) || v.FileFormat != cache.FormatVersion || v.Go != runtime.Version() {
		t.Errorf("version --json: %+v", v)
	}
}
