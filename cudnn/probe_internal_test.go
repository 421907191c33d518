package cudnn

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// setProbe replaces the driver query and the timeout for one test.
func setProbe(t *testing.T, fn func(int, string, string) (Device, error), timeout time.Duration) {
	probeMu.Lock()
	oldFn, oldTimeout := probeFn, probeTimeout
	probeFn, probeTimeout = fn, timeout
	probeMu.Unlock()
	t.Cleanup(func() {
		probeMu.Lock()
		probeFn, probeTimeout = oldFn, oldTimeout
		probeMu.Unlock()
	})
}

// A driver that hangs costs each caller the timeout, and only one stuck
// query exists however many callers there are.
func TestProbeHungDriver(t *testing.T) {
	release := make(chan struct{})
	var queries atomic.Int32
	setProbe(t, func(int, string, string) (Device, error) {
		queries.Add(1)
		<-release
		return Device{Name: "late"}, nil
	}, 50*time.Millisecond)
	t.Setenv("CONVCACHE_CUDA_LIBRARY", "hung-driver-test")
	for i := 0; i < 3; i++ {
		start := time.Now()
		_, err := Probe(0)
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("call %d: %v, want ErrUnavailable", i, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("call %d waited %v", i, d)
		}
	}
	if n := queries.Load(); n != 1 {
		t.Fatalf("%d queries for one device, want 1", n)
	}
	close(release)
	// Once the stuck query ends, the next call asks again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		probeMu.Lock()
		n := len(inflight)
		probeMu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	setProbe(t, func(int, string, string) (Device, error) { return Device{Name: "ok"}, nil }, time.Second)
	if d, err := Probe(0); err != nil || d.Name != "ok" {
		t.Fatalf("after the driver answered: %+v, %v", d, err)
	}
}
