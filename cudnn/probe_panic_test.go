package cudnn

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// A panic in the probe goroutine is recovered: the caller gets
// ErrUnavailable, one warning is printed however often it happens, and a
// later probe works.
func TestProbePanicRecovered(t *testing.T) {
	var warn bytes.Buffer
	probeMu.Lock()
	oldWarn := probeWarn
	probeWarn = &warn
	probeMu.Unlock()
	t.Cleanup(func() {
		probeMu.Lock()
		probeWarn = oldWarn
		probeMu.Unlock()
	})
	setProbe(t, func(int, string, string) (Device, error) { panic("injected probe failure") }, 10*time.Second)
	t.Setenv("CONVCACHE_CUDA_LIBRARY", "panicking-driver-test")
	for i := 0; i < 2; i++ {
		_, err := Probe(0)
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "injected probe failure") {
			t.Fatalf("call %d: %v, want ErrUnavailable with the panic", i, err)
		}
	}
	if n := strings.Count(warn.String(), "\n"); n != 1 || !strings.Contains(warn.String(), "panic") {
		t.Fatalf("warnings: %q, want one line", warn.String())
	}
	setProbe(t, func(int, string, string) (Device, error) { return Device{Name: "ok"}, nil }, 10*time.Second)
	if d, err := Probe(0); err != nil || d.Name != "ok" {
		t.Fatalf("after the panic: %+v, %v", d, err)
	}
}
