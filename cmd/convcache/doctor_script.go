package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// What convcache doctor reads in the program it is given (convcache doctor
// -- python train.py): which interpreter runs it, and in its script,
// whether it sets torch.backends.cudnn.benchmark and
// TORCH_CUDNN_V8_API_DISABLED. This is a heuristic, and the doctor says so
// where it reports it: it reads one file, line by line, and does not run
// it; a module the script imports, a configuration file or a value
// computed at run time are not seen.

// maxScript bounds how much of a script is read.
const maxScript = 4 << 20

var pythonName = regexp.MustCompile(`^python[0-9.]*$`)

// interpreterOf returns the Python interpreter a command runs: the command
// itself when it is one (python, python3, python3.12), else the
// interpreter its "#!" line names (torchrun, accelerate and the other
// launchers a venv installs are Python scripts), else "".
func interpreterOf(command []string) string {
	if len(command) == 0 {
		return ""
	}
	if pythonName.MatchString(filepath.Base(command[0])) {
		return command[0]
	}
	path, err := exec.LookPath(command[0])
	if err != nil {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 512)).ReadString('\n')
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if !strings.HasPrefix(line, "#!") || len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" && len(fields) > 1 { // #!/usr/bin/env python3
		fields = fields[1:]
	}
	if pythonName.MatchString(filepath.Base(fields[0])) {
		return fields[0]
	}
	return ""
}

// scriptFacts is what the heuristic found in a script.
type scriptFacts struct {
	name      string       // the script's path, or "the -c code"
	err       error        // it could not be read
	benchmark []assignment // every assignment to cudnn.benchmark
	v7Line    int          // a line that sets TORCH_CUDNN_V8_API_DISABLED to "1", or 0
	enable    int          // the first line that calls convcache.enable(), or 0 (doctor_enable.go)
	torch     int          // the first line that imports torch, or 0
	truncated bool         // longer than maxScript: the rest was not read
}

// assignment is one "cudnn.benchmark = VALUE" the script makes.
type assignment struct {
	line  int
	value string // "True", "False", or the expression
}

var (
	// torch.backends.cudnn.benchmark = True, cudnn.benchmark=False,
	// backends.cudnn.benchmark = args.benchmark (never ==).
	benchmarkSet = regexp.MustCompile(`\bcudnn\.benchmark\s*=([^=].*|)$`)
	// torch.backends.cudnn.set_flags(..., _benchmark=True, ...)
	benchmarkFlags = regexp.MustCompile(`\bset_flags\(.*\b_benchmark\s*=\s*(True|False)\b`)
	// os.environ["TORCH_CUDNN_V8_API_DISABLED"] = "1", os.environ.setdefault(..., "1"), os.putenv(..., "1")
	v7Set = regexp.MustCompile(`(environ\[\s*["']` + torchV7Var + `["']\s*\]\s*=\s*["']1["']` +
		`|(setdefault|putenv)\(\s*["']` + torchV7Var + `["']\s*,\s*["']1["']\s*\))`)
)

// scriptOf finds the Python code a command runs: the code of "-c CODE",
// else the first argument that names a .py file (python train.py,
// torchrun --nproc_per_node 8 train.py, python -m torch.distributed.run
// train.py). It returns nil when there is none (python -m module, a
// binary).
func scriptOf(command []string) *scriptFacts {
	for i := 1; i < len(command); i++ {
		if command[i] == "-c" && i+1 < len(command) {
			return scanScript("the -c code", strings.NewReader(command[i+1]))
		}
		if strings.HasSuffix(command[i], ".py") && !strings.HasPrefix(command[i], "-") {
			f, err := os.Open(command[i])
			if err != nil {
				return &scriptFacts{name: command[i], err: err}
			}
			defer f.Close()
			return scanScript(command[i], f)
		}
	}
	return nil
}

// scanScript reads a script line by line, at most maxScript bytes.
func scanScript(name string, r io.Reader) *scriptFacts {
	s := &scriptFacts{name: name}
	lr := &io.LimitedReader{R: r, N: maxScript}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 64<<10), maxScript)
	for n := 1; sc.Scan(); n++ {
		line, code := splitCode(sc.Text())
		if m := benchmarkSet.FindStringSubmatchIndex(code); m != nil {
			// The value as written (a string in it included).
			v := strings.TrimSuffix(strings.TrimSpace(line[m[2]:m[3]]), ";")
			s.benchmark = append(s.benchmark, assignment{n, strings.TrimSpace(v)})
		} else if m := benchmarkFlags.FindStringSubmatch(code); m != nil {
			s.benchmark = append(s.benchmark, assignment{n, m[1]})
		}
		if s.v7Line == 0 && v7Set.MatchString(line) {
			s.v7Line = n
		}
		if s.enable == 0 && enableCall.MatchString(code) {
			s.enable = n
		}
		if s.torch == 0 && torchImport.MatchString(code) {
			s.torch = n
		}
	}
	if err := sc.Err(); err != nil {
		s.err = err
	}
	s.truncated = lr.N == 0
	return s
}

// splitCode returns a line without its "#" comment, and the same with
// the insides of its string literals blanked (same length): an assignment
// is looked for in the code, never in a string or a comment, and read back
// from the line.
func splitCode(line string) (noComment, code string) {
	b := []byte(line)
	var quote byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case quote != 0 && c == '\\':
			b[i] = ' '
			if i+1 < len(b) {
				i++
				b[i] = ' '
			}
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			b[i] = ' '
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return line[:i], string(b[:i])
		}
	}
	return line, string(b)
}

// benchmarkFinding says what the script sets torch.backends.cudnn.benchmark
// to, as far as the heuristic can tell.
func (s *scriptFacts) benchmarkFinding() finding {
	const heuristic = "read from the script, a heuristic: a module it imports is not read"
	f := finding{Check: "benchmark"}
	if s.err != nil {
		f.Status, f.Summary = statusWarning, fmt.Sprintf("cannot read %s: %v", s.name, s.err)
		f.Advice = "make sure the program sets torch.backends.cudnn.benchmark = True: PyTorch's default is False, and nothing is benchmarked or cached without it"
		return f
	}
	var yes, no, other []string
	for _, a := range s.benchmark {
		at := fmt.Sprintf("line %d", a.line)
		switch a.value {
		case "True":
			yes = append(yes, at)
		case "False":
			no = append(no, at)
		default:
			other = append(other, fmt.Sprintf("%s (%s)", at, safeText(a.value)))
		}
	}
	switch {
	case len(yes) > 0 && len(no) == 0 && len(other) == 0:
		f.Status = statusOK
		f.Summary = fmt.Sprintf("%s sets torch.backends.cudnn.benchmark = True (%s; %s)", s.name, strings.Join(yes, ", "), heuristic)
		f.Advice = "set it before the first convolution: shapes met before are not benchmarked"
	case len(no) > 0 && len(yes) == 0 && len(other) == 0:
		f.Status = statusProblem
		f.Summary = fmt.Sprintf("%s sets torch.backends.cudnn.benchmark = False (%s; %s): PyTorch benchmarks nothing, so nothing is cached", s.name, strings.Join(no, ", "), heuristic)
		f.Advice = "set torch.backends.cudnn.benchmark = True before the first convolution"
	case len(s.benchmark) > 0:
		f.Status = statusWarning
		f.Summary = fmt.Sprintf("%s sets torch.backends.cudnn.benchmark in ways the doctor cannot evaluate: %s (%s)", s.name,
			strings.Join(append(append(append([]string{}, yes...), no...), other...), ", "), heuristic)
		f.Advice = "make sure it is True when the first convolution runs: PyTorch's default is False, and nothing is benchmarked or cached without it"
	default:
		f.Status = statusProblem
		f.Summary = fmt.Sprintf("%s does not set torch.backends.cudnn.benchmark (%s)", s.name, heuristic)
		if s.truncated { // the rest may set it
			f.Status = statusWarning
			f.Summary += fmt.Sprintf("; only its first %s were read", bytesText(maxScript))
		}
		f.Advice = "add torch.backends.cudnn.benchmark = True before the first convolution: PyTorch's default is False, and nothing is benchmarked or cached without it (if a module it imports sets it, this finding is wrong)"
	}
	return f
}
