package cudnn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/cudnn"
)

func TestDeviceScopeFormat(t *testing.T) {
	d := cudnn.Device{Name: "NVIDIA H100 80GB HBM3", Major: 9, Minor: 0, SMs: 132,
		Driver: 13000, CuDNN: 91300, Cudart: 13000}
	want := "cc1;gpu=NVIDIA H100 80GB HBM3;cc=9.0;sms=132;driver=13000;cudnn=91300;cudart=13000"
	if got := d.Scope(""); got != want {
		t.Fatalf("Scope = %q\nwant      %q", got, want)
	}
	if got := d.Scope("torch-2.9.0+git1234;x"); got != want+";tag=torch-2.9.0+git1234;x" {
		t.Fatalf("tagged Scope = %q", got)
	}
	d.Name = "  Evil;cc=1.0\n=GPU "
	if got := d.Scope(""); !strings.HasPrefix(got, "cc1;gpu=Evil_cc_1.0__GPU;cc=9.0;") {
		t.Fatalf("name not cleaned: %q", got)
	}
}

func TestScopeOverride(t *testing.T) {
	t.Setenv("CONVCACHE_CUDA_LIBRARY", "/nonexistent/libcuda.so.1")
	t.Setenv("CONVCACHE_TAG", "ignored")
	t.Setenv("CONVCACHE_SCOPE", "my-scope")
	for _, dev := range []int{0, 7} {
		if s, err := cudnn.Scope(dev); err != nil || s != "my-scope" {
			t.Fatalf("Scope(%d) = %q, %v; want the override", dev, s, err)
		}
	}
	t.Setenv("CONVCACHE_SCOPE", strings.Repeat("s", cache.MaxScopeSize+1))
	if _, err := cudnn.Scope(0); !errors.Is(err, cache.ErrSize) {
		t.Fatalf("over-long CONVCACHE_SCOPE: %v, want ErrSize", err)
	}
	if _, err := cudnn.Scope(-1); !errors.Is(err, cache.ErrInvalid) {
		t.Fatalf("Scope(-1): %v, want ErrInvalid", err)
	}
}

func TestNoDriver(t *testing.T) {
	t.Setenv("CONVCACHE_SCOPE", "")
	t.Setenv("CONVCACHE_CUDA_LIBRARY", "/nonexistent/libcuda.so.1")
	_, err := cudnn.Scope(0)
	if !errors.Is(err, cudnn.ErrUnavailable) {
		t.Fatalf("Scope without a driver: %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "/nonexistent/libcuda.so.1") && !strings.Contains(err.Error(), "without cgo") {
		t.Errorf("error does not name the library: %v", err)
	}
	if _, err := cudnn.Probe(-2); !errors.Is(err, cache.ErrInvalid) {
		t.Fatalf("Probe(-2): %v", err)
	}
}

// On this machine, whatever it has: a fingerprint or ErrUnavailable, never
// a crash or a hang.
func TestProbeDefault(t *testing.T) {
	t.Setenv("CONVCACHE_SCOPE", "")
	d, err := cudnn.Probe(0)
	if err != nil {
		if !errors.Is(err, cudnn.ErrUnavailable) {
			t.Fatalf("Probe: %v, want nil or ErrUnavailable", err)
		}
		t.Logf("no GPU here: %v", err)
		return
	}
	if d.Name == "" || d.SMs <= 0 || d.CuDNN == 0 {
		t.Fatalf("implausible fingerprint %+v", d)
	}
	t.Logf("scope: %s", d.Scope(""))
}
