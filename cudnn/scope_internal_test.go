package cudnn

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
)

// fakeMachine answers the probe as a machine with these devices would:
// an ordinal past the last is ErrNoDevice, and fail[i] fails device i.
func fakeMachine(t *testing.T, devs []Device, fail map[int]error) *atomic.Int32 {
	var calls atomic.Int32
	setProbe(t, func(i int, _, _ string) (Device, error) {
		calls.Add(1)
		if err := fail[i]; err != nil {
			return Device{}, err
		}
		if i >= len(devs) {
			return Device{}, fmt.Errorf("%w: ordinal %d", ErrNoDevice, i)
		}
		d := devs[i]
		d.Ordinal = i
		return d, nil
	}, time.Minute)
	return &calls
}

var (
	h100 = Device{Name: "H100", Major: 9, SMs: 132, Driver: 13000, CuDNN: 91300, Cudart: 13000}
	a100 = Device{Name: "A100", Major: 8, SMs: 108, Driver: 13000, CuDNN: 91300, Cudart: 13000}
)

// The one scope rule, through each of its entry points: Scope (one
// ordinal), ScopeFor (a device already read) and Scopes (the machine).
func TestScopeRule(t *testing.T) {
	calls := fakeMachine(t, []Device{h100, h100, a100}, nil)
	t.Setenv("CONVCACHE_SCOPE", "")
	t.Setenv("CONVCACHE_TAG", "torch-2.9")
	want := []string{h100.Scope("torch-2.9"), a100.Scope("torch-2.9")}
	if got, err := Scopes(); err != nil || !slices.Equal(got, want) {
		t.Fatalf("Scopes() = %q, %v; want %q", got, err, want)
	}
	if s, err := Scope(2); err != nil || s != want[1] {
		t.Fatalf("Scope(2) = %q, %v", s, err)
	}
	if s, err := ScopeFor(a100); err != nil || s != want[1] {
		t.Fatalf("ScopeFor = %q, %v", s, err)
	}
	devs, partial, err := Devices()
	if err != nil || partial != nil || len(devs) != 3 || devs[2].Ordinal != 2 {
		t.Fatalf("Devices() = %+v, %v, %v", devs, partial, err)
	}

	// $CONVCACHE_SCOPE names every device's scope, and no device is read.
	t.Setenv("CONVCACHE_SCOPE", "my-cluster")
	calls.Store(0)
	for name, f := range map[string]func() (string, error){
		"Scope":    func() (string, error) { return Scope(1) },
		"ScopeFor": func() (string, error) { return ScopeFor(a100) },
		"Scopes": func() (string, error) {
			s, err := Scopes()
			return strings.Join(s, ","), err
		},
	} {
		if s, err := f(); err != nil || s != "my-cluster" {
			t.Errorf("%s with CONVCACHE_SCOPE: %q, %v", name, s, err)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the override still probed %d times", n)
	}

	// Too long, either way: ErrSize, from every entry point.
	t.Setenv("CONVCACHE_SCOPE", strings.Repeat("s", cache.MaxScopeSize+1))
	if _, err := Scopes(); !errors.Is(err, cache.ErrSize) {
		t.Errorf("over-long CONVCACHE_SCOPE: Scopes %v", err)
	}
	if _, err := ScopeOverride(); !errors.Is(err, cache.ErrSize) {
		t.Errorf("over-long CONVCACHE_SCOPE: ScopeOverride %v", err)
	}
	t.Setenv("CONVCACHE_SCOPE", "")
	t.Setenv("CONVCACHE_TAG", strings.Repeat("t", cache.MaxScopeSize))
	if _, err := ScopeFor(h100); !errors.Is(err, cache.ErrSize) {
		t.Errorf("over-long tag: ScopeFor %v", err)
	}
	if _, err := Scopes(); !errors.Is(err, cache.ErrSize) {
		t.Errorf("over-long tag: Scopes %v", err)
	}
}

// Devices stops at the last device; a later device that fails otherwise
// ends the list with a partial error; device 0 failing fails it all.
func TestDevicesFailures(t *testing.T) {
	t.Setenv("CONVCACHE_SCOPE", "")
	broken := fmt.Errorf("%w: cuDNN crashed", ErrUnavailable)
	fakeMachine(t, []Device{h100, a100, h100}, map[int]error{1: broken})
	devs, partial, err := Devices()
	if err != nil || len(devs) != 1 || !errors.Is(partial, broken) || !strings.Contains(partial.Error(), "device 1") {
		t.Fatalf("Devices() = %+v, %v, %v", devs, partial, err)
	}
	fakeMachine(t, []Device{h100}, map[int]error{0: broken})
	if devs, _, err := Devices(); !errors.Is(err, broken) || devs != nil {
		t.Fatalf("device 0 broken: %+v, %v", devs, err)
	}
	if _, err := Scopes(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Scopes with device 0 broken: %v", err)
	}
	fakeMachine(t, make([]Device, MaxDevices+5), nil)
	if devs, _, err := Devices(); err != nil || len(devs) != MaxDevices {
		t.Fatalf("%d devices, %v; want MaxDevices", len(devs), err)
	}
}
