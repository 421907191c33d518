package config

import (
	"strings"
	"testing"
)

// mapEnv is an environment for one test: a Lookup over env, and the
// warnings printed while the test runs (each once, from a clean slate).
func mapEnv(t *testing.T, env map[string]string) (Lookup, *strings.Builder) {
	t.Helper()
	w := &strings.Builder{}
	SetWarnOutput(w)
	t.Cleanup(func() { SetWarnOutput(nopWriter{}) })
	return func(name string) (string, bool) { v, ok := env[name]; return v, ok }, w
}

// varsOf is vars over env, with its warnings.
func varsOf(t *testing.T, env map[string]string) (vars, *strings.Builder) {
	t.Helper()
	l, w := mapEnv(t, env)
	return vars{l}, w
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// lines counts the warning lines printed.
func lines(w *strings.Builder) int { return strings.Count(w.String(), "\n") }
