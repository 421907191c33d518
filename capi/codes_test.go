package main

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/convcache/convcache/cache"
)

// The return codes are listed once, in include/convcache.h: the #defines
// (the ABI) and the X-macro lists that convcache_strerror,
// convcache_dynamic.h and convcache.hpp expand. These tests hold the Go side
// to that list: code() (exports.go) must give each engine error the code of
// the right name, every code must come from somewhere, and a code cannot be
// added to the header, or an error to the engine, on one side only.

// engineCodes: what code() must return for each engine error, by the
// code's name in convcache.h ("E_LOCK" is CONVCACHE_E_LOCK). goName is the
// error's name in package cache, "" for errors of capi's own.
var engineCodes = []struct {
	goName string
	err    error
	name   string
}{
	{"ErrInvalid", cache.ErrInvalid, "E_INVALID"},
	{"ErrSize", cache.ErrSize, "E_SIZE"},
	{"ErrRange", cache.ErrRange, "E_RANGE"},
	{"ErrClosed", cache.ErrClosed, "E_HANDLE"},
	{"ErrFormat", cache.ErrFormat, "E_FORMAT"},
	{"ErrCorrupt", cache.ErrCorrupt, "E_CORRUPT"},
	{"ErrIO", cache.ErrIO, "E_IO"},
	{"ErrAccess", cache.ErrAccess, "E_ACCESS"},
	{"ErrLock", cache.ErrLock, "E_LOCK"},
	{"ErrPending", cache.ErrPending, "PENDING"},
	{"ErrReadOnly", cache.ErrReadOnly, "E_READONLY"},
	{"ErrNoSpace", cache.ErrNoSpace, "E_NOSPC"},
	{"ErrMiss", cache.ErrMiss, "E_MISS"},
	{"", builderError{code: 7}, "E_BUILDER"},
	{"", errors.New("convcache: something no code names"), "E_INTERNAL"},
}

// otherSources: codes that no engine error maps to, and where the C ABI
// returns each (some source file of capi/ must name the code).
var otherSources = map[string]string{
	"OK":            "exports.go",
	"HIT":           "exports.go",
	"E_FORKED":      "capi.c",
	"E_UNAVAILABLE": "cudnn.go",
}

// notReturned: exported engine errors that the C ABI never sees, and why.
// (An entry may go when its error leaves package cache.)
var notReturned = map[string]string{
	"ErrNoFile": "Rewrite's, an offline tool's, which capi does not call",
}

// headerCodes is what include/convcache.h says about the codes.
type headerCodes struct {
	values map[string]int    // name ("E_IO", "OK") -> value of its #define
	listed map[string]string // name -> message, from the X-macro lists
	order  []string          // names in list order
}

var (
	defineRe = regexp.MustCompile(`(?m)^#define CONVCACHE_(OK|HIT|PENDING|E_[A-Z]+)\s+\(?(-?\d+)\)?`)
	statusRe = regexp.MustCompile(`^X\((\w+), ("(?:[^"\\]|\\.)*")\)$`)
	errorRe  = regexp.MustCompile(`^X\((\w+), ("(?:[^"\\]|\\.)*"), (\w+), (\w+)\)$`)
)

func readHeader(t *testing.T) headerCodes {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "include", "convcache.h"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	h := headerCodes{values: map[string]int{}, listed: map[string]string{}}
	for _, m := range defineRe.FindAllStringSubmatch(src, -1) {
		v, err := strconv.Atoi(m[2])
		if err != nil {
			t.Fatalf("#define CONVCACHE_%s: %v", m[1], err)
		}
		h.values[m[1]] = v
	}
	for _, l := range []struct {
		macro, prefix string
		row           *regexp.Regexp
	}{
		{"CONVCACHE_STATUS_LIST", "", statusRe},
		{"CONVCACHE_ERROR_LIST", "E_", errorRe},
	} {
		rows := macroRows(t, src, l.macro)
		if len(rows) == 0 {
			t.Fatalf("convcache.h: %s has no rows", l.macro)
		}
		for _, r := range rows {
			m := l.row.FindStringSubmatch(r)
			if m == nil {
				t.Fatalf("convcache.h: %s: row %q is not of the documented form", l.macro, r)
			}
			msg, err := strconv.Unquote(m[2])
			if err != nil {
				t.Fatalf("convcache.h: %s: row %q: %v", l.macro, r, err)
			}
			name := l.prefix + m[1]
			if _, dup := h.listed[name]; dup {
				t.Errorf("convcache.h: CONVCACHE_%s is listed twice", name)
			}
			h.listed[name] = msg
			h.order = append(h.order, name)
		}
	}
	return h
}

// macroRows returns the X(...) rows of "#define macro(X)": the lines up to
// the first without a continuation backslash, with spaces collapsed.
func macroRows(t *testing.T, src, macro string) []string {
	t.Helper()
	head := "#define " + macro + "(X)"
	i := strings.Index(src, head)
	if i < 0 {
		t.Fatalf("convcache.h has no %s", head)
	}
	var rows []string
	for j, line := range strings.Split(src[i+len(head):], "\n") {
		more := strings.HasSuffix(strings.TrimSpace(line), `\`)
		row := strings.Join(strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), `\`)), " ")
		if row != "" {
			rows = append(rows, row)
		}
		if !more && j > 0 {
			break
		}
		if !more && j == 0 {
			t.Fatalf("%s does not continue onto the next line", head)
		}
	}
	return rows
}

// TestHeaderListsMatchDefines: every CONVCACHE_E_* #define but E_USER, and
// every status, has exactly one row in the lists, and no row lacks one; the
// values are distinct, errors negative and above CONVCACHE_E_USER.
func TestHeaderListsMatchDefines(t *testing.T) {
	h := readHeader(t)
	user, ok := h.values["E_USER"]
	if !ok {
		t.Fatal("convcache.h: no CONVCACHE_E_USER")
	}
	seen := map[int]string{}
	for name, v := range h.values {
		if name == "E_USER" {
			continue
		}
		if _, ok := h.listed[name]; !ok {
			t.Errorf("CONVCACHE_%s (%d) is #defined but has no row in convcache.h's lists", name, v)
		}
		if other, dup := seen[v]; dup {
			t.Errorf("CONVCACHE_%s and CONVCACHE_%s are both %d", name, other, v)
		}
		seen[v] = name
		if strings.HasPrefix(name, "E_") != (v < 0) || v <= user {
			t.Errorf("CONVCACHE_%s = %d: errors are negative and above CONVCACHE_E_USER, statuses not", name, v)
		}
	}
	for _, name := range h.order {
		if _, ok := h.values[name]; !ok {
			t.Errorf("convcache.h lists %s, which has no #define CONVCACHE_%s", name, name)
		}
		if h.listed[name] == "" {
			t.Errorf("convcache.h: %s has an empty message", name)
		}
	}
}

// TestEngineErrorCodes: code() gives each engine error the code of the
// right name, passes a builder's own negative code through, and gives
// nil CONVCACHE_OK.
func TestEngineErrorCodes(t *testing.T) {
	h := readHeader(t)
	for _, c := range engineCodes {
		want, ok := h.values[c.name]
		if !ok {
			t.Errorf("%v: convcache.h has no CONVCACHE_%s", c.err, c.name)
			continue
		}
		if got := int(code(c.err)); got != want {
			t.Errorf("code(%v) = %d, want CONVCACHE_%s (%d)", c.err, got, c.name, want)
		}
		wrapped := errors.Join(errors.New("/some/path"), c.err)
		if got := int(code(wrapped)); got != want {
			t.Errorf("code(wrapped %v) = %d, want CONVCACHE_%s (%d)", c.err, got, c.name, want)
		}
	}
	if got := int(code(nil)); got != h.values["OK"] {
		t.Errorf("code(nil) = %d, want CONVCACHE_OK", got)
	}
	own := h.values["E_USER"] - 5
	if got := int(code(builderError{code: own})); got != own {
		t.Errorf("code(builder's own %d) = %d, want it passed through", own, got)
	}
}

// TestEveryCodeHasASource: each listed code is what code() gives an engine
// error, or is named by capi's sources (otherSources); and every exported
// engine error (cache.Err*) is in engineCodes, so that a new one cannot fall
// through to CONVCACHE_E_INTERNAL unnoticed.
func TestEveryCodeHasASource(t *testing.T) {
	h := readHeader(t)
	fromEngine := map[string]bool{}
	for _, c := range engineCodes {
		fromEngine[c.name] = true
	}
	for _, name := range h.order {
		file, other := otherSources[name]
		switch {
		case fromEngine[name] && other:
			t.Errorf("%s is both in engineCodes and otherSources", name)
		case fromEngine[name]:
		case other:
			if !capiNames(t, "CONVCACHE_"+name) {
				t.Errorf("otherSources says %s returns CONVCACHE_%s; no source file of capi/ names it", file, name)
			}
		default:
			t.Errorf("CONVCACHE_%s is listed in convcache.h, but no engine error maps to it (code() in "+
				"exports.go, and engineCodes here) and no other source is named (otherSources here)", name)
		}
	}
	for name := range otherSources {
		if _, ok := h.listed[name]; !ok {
			t.Errorf("otherSources names %s, which convcache.h does not list", name)
		}
	}

	inTable := map[string]bool{}
	for _, c := range engineCodes {
		if c.goName != "" {
			inTable[c.goName] = true
		}
	}
	inSource := map[string]bool{}
	for _, name := range exportedErrors(t) {
		inSource[name] = true
		if !inTable[name] && notReturned[name] == "" {
			t.Errorf("cache.%s has no row in engineCodes: give it a code in exports.go's code() and a row here", name)
		}
	}
	for name := range inTable {
		if !inSource[name] {
			t.Errorf("engineCodes names cache.%s, which package cache does not declare", name)
		}
	}
}

// capiNames reports whether a non-test source file of capi/ contains word.
func capiNames(t *testing.T, word string) bool {
	t.Helper()
	for _, pattern := range []string{"*.go", "*.c"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), word) {
				return true
			}
		}
	}
	return false
}

// exportedErrors lists the exported Err* variables declared in package
// cache's source.
func exportedErrors(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "cache", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("found no exported Err* variables in ../cache")
	}
	return names
}
