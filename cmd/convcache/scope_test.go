package main

import (
	"strings"
	"testing"

	"github.com/convcache/convcache/internal/cachefile"
)

// noDriver makes the probe fail as on a machine without the NVIDIA driver,
// whatever this machine has.
var noDriver = []string{"CONVCACHE_CUDA_LIBRARY=/nonexistent/libcuda.so.1"}

func TestScopeWithoutDriver(t *testing.T) {
	r := mustRun(t, exitNoDevice, noDriver, "scope")
	if r.stdout != "" {
		t.Fatalf("stdout %q", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "convcache scope: no device fingerprint on this machine: ") ||
		!strings.Contains(r.stderr, "/nonexistent/libcuda.so.1") || !strings.Contains(r.stderr, "CONVCACHE_SCOPE") ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("stderr %q", r.stderr)
	}
	r = mustRun(t, exitNoDevice, noDriver, "scope", "--json")
	var s scopeJSON
	decodeJSON(t, r.stdout, &s)
	if len(s.Devices) != 0 || !strings.Contains(s.Error, "no device fingerprint") {
		t.Fatalf("json %+v", s)
	}
	mustRun(t, exitNoDevice, noDriver, "scope", "--device", "0")
	mustRun(t, exitUsage, noDriver, "scope", "extra")
}

func TestScopeOverride(t *testing.T) {
	env := append([]string{"CONVCACHE_SCOPE=my-cluster-v3"}, noDriver...)
	r := mustRun(t, exitOK, env, "scope", "--device", "0")
	if r.stdout != "my-cluster-v3\n" {
		t.Fatalf("stdout %q", r.stdout)
	}
	r = mustRun(t, exitOK, env, "scope")
	if !strings.Contains(r.stdout, "CONVCACHE_SCOPE overrides the fingerprint of every device:\n  scope my-cluster-v3\n") {
		t.Fatalf("stdout %q", r.stdout)
	}
	r = mustRun(t, exitOK, env, "scope", "--json")
	var s scopeJSON
	decodeJSON(t, r.stdout, &s)
	if s.Override != "my-cluster-v3" || s.Error != "" {
		t.Fatalf("json %+v", s)
	}
}

// On a machine with a GPU, every device has a cc1 scope.
func TestScopeDevices(t *testing.T) {
	r := cli(t, nil, "scope", "--json")
	if r.code == exitNoDevice {
		t.Skipf("no CUDA device here: %s", strings.TrimSpace(r.stderr))
	}
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var s scopeJSON
	decodeJSON(t, r.stdout, &s)
	if len(s.Devices) == 0 {
		t.Fatal("no devices")
	}
	for _, d := range s.Devices {
		if !strings.HasPrefix(d.Scope, "cc1;gpu=") || d.Hash != hashText(cachefile.ScopeHash(d.Scope)) {
			t.Errorf("device %+v", d)
		}
	}
	r = mustRun(t, exitOK, nil, "scope", "--device", "0")
	if strings.TrimSpace(r.stdout) != s.Devices[0].Scope {
		t.Fatalf("--device 0 = %q, want %q", r.stdout, s.Devices[0].Scope)
	}
}
