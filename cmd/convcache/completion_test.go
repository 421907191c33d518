package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// completionScript writes convcache completion SHELL to a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	r := mustRun(t, exitOK, nil, "completion", shell)
	if r.stderr != "" || !strings.Contains(r.stdout, "convcache") {
		t.Fatalf("completion %s: stdout %d bytes, stderr %q", shell, len(r.stdout), r.stderr)
	}
	p := filepath.Join(t.TempDir(), "convcache."+shell)
	if err := os.WriteFile(p, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// bashDriver sources the completion script and completes command lines as
// bash does on TAB: it fills COMP_WORDS and COMP_CWORD, calls the function
// the script registers, and prints COMPREPLY one per line. Without the
// bash-completion package, _get_comp_words_by_ref (which the script calls)
// gets a minimal stand-in.
const bashDriver = `
if [ -r /usr/share/bash-completion/bash_completion ]; then
    . /usr/share/bash-completion/bash_completion
else
    _get_comp_words_by_ref() {
        cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
    }
fi
compopt() { :; } # only works inside a real completion
. "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
COMPREPLY=()
__start_convcache
printf '%s\n' "${COMPREPLY[@]}"
`

func TestBashCompletion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script := completionScript(t, "bash")
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	complete := func(words ...string) []string {
		args := append([]string{"-c", bashDriver, "driver", script, binary}, words...)
		cmd := exec.Command("bash", args...)
		cmd.Env = cleanEnv(t)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("completing %q: %v", words, err)
		}
		return strings.Fields(string(out))
	}
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{"st"}, "stats"},
		{[]string{""}, "stats ls dump verify compact prune merge export import scope run doctor config version completion help"},
		{[]string{"co"}, "compact config completion"},
		{[]string{"ls", "--js"}, "--json"},
		{[]string{"merge", "--out"}, "--output"},
		{[]string{"run", "--mode", "r"}, "rw ro recache"},
		{[]string{"completion", ""}, "bash zsh fish"},
		{[]string{"help", "ver"}, "verify version"},
	} {
		if got := strings.Join(complete(c.words...), " "); got != c.want {
			t.Errorf("convcache %s<TAB>: %q, want %q", strings.Join(c.words, " "), got, c.want)
		}
	}
}

func TestZshCompletion(t *testing.T) {
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Skip("zsh is not installed (apt-get install zsh); the bash test covers the shared __complete protocol")
	}
	script := completionScript(t, "zsh")
	if out, err := exec.Command("zsh", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
	// Sourced, it defines the completion function for convcache and asks
	// compdef to bind it.
	out, err := exec.Command("zsh", "-f", "-c",
		`compdef() { print "compdef $*" }; source "$1"; whence -w _convcache`, "zsh", script).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "compdef _convcache convcache") || !strings.Contains(string(out), "_convcache: function") {
		t.Fatalf("sourcing the zsh script: %v\n%s", err, out)
	}
}
