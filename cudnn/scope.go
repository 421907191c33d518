package cudnn

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/config"
)

// ScopeFormat is the leading field of every scope string Scope builds. It
// changes whenever the format does.
const ScopeFormat = "cc1"

// ProbeTimeout bounds how long Probe waits for the CUDA driver.
const ProbeTimeout = 30 * time.Second

// ErrUnavailable reports that the CUDA driver, a device or cuDNN is not
// available. The returned error wraps it with the reason and what to do.
var ErrUnavailable = errors.New("convcache: not available")

// ErrNoDevice reports a device ordinal past the last device. It wraps
// ErrUnavailable; tools that enumerate devices stop at it.
var ErrNoDevice = fmt.Errorf("%w: no such CUDA device", ErrUnavailable)

// Device is what the fingerprint reads about one CUDA device and the
// libraries in use.
type Device struct {
	Ordinal      int    // CUDA driver ordinal
	Name         string // cuDeviceGetName
	Major, Minor int    // compute capability
	SMs          int    // multiprocessor count
	Driver       int    // cuDriverGetVersion, e.g. 13000
	CuDNN        uint64 // cudnnGetVersion, e.g. 91300
	Cudart       uint64 // cudnnGetCudartVersion, e.g. 13000
}

// Scope returns the device's scope string in format ScopeFormat, with tag
// appended when it is not empty. It does not look at the environment.
func (d Device) Scope(tag string) string {
	var b strings.Builder
	b.WriteString(ScopeFormat)
	b.WriteString(";gpu=")
	b.WriteString(cleanName(d.Name))
	fmt.Fprintf(&b, ";cc=%d.%d;sms=%d;driver=%d;cudnn=%d;cudart=%d", d.Major, d.Minor, d.SMs, d.Driver, d.CuDNN, d.Cudart)
	if tag != "" {
		b.WriteString(";tag=")
		b.WriteString(tag)
	}
	return b.String()
}

// cleanName keeps a GPU name from imitating another field.
func cleanName(s string) string {
	s = strings.TrimSpace(s)
	return strings.Map(func(r rune) rune {
		if r == ';' || r == '=' || r < 0x20 || r == 0x7f {
			return '_'
		}
		return r
	}, s)
}

// Scope returns the scope for CUDA device ordinal device: $CONVCACHE_SCOPE
// when it is set and not empty, else the device's fingerprint with
// $CONVCACHE_TAG. It fails with an error wrapping ErrUnavailable when the
// driver, the device or cuDNN is missing, cache.ErrInvalid for a negative
// device, and cache.ErrSize when the result would be longer than
// cache.MaxScopeSize.
func Scope(device int) (string, error) {
	if device < 0 {
		return "", fmt.Errorf("%w: device %d is negative", cache.ErrInvalid, device)
	}
	if s, _ := config.LookupEnv("CONVCACHE_SCOPE"); s != "" {
		if len(s) > cache.MaxScopeSize {
			return "", fmt.Errorf("%w: CONVCACHE_SCOPE is %d bytes, the limit is %d", cache.ErrSize, len(s), cache.MaxScopeSize)
		}
		return s, nil
	}
	d, err := Probe(device)
	if err != nil {
		return "", err
	}
	tag, _ := config.LookupEnv("CONVCACHE_TAG")
	s := d.Scope(tag)
	if len(s) > cache.MaxScopeSize {
		return "", fmt.Errorf("%w: the scope with CONVCACHE_TAG is %d bytes, the limit is %d", cache.ErrSize, len(s), cache.MaxScopeSize)
	}
	return s, nil
}

// probeKey identifies one question to the driver.
type probeKey struct {
	device       int
	cuda, cudnnL string
}

type probeCall struct {
	done chan struct{}
	dev  Device
	err  error
}

var (
	probeMu  sync.Mutex
	inflight = map[probeKey]*probeCall{}

	// Replaced by tests.
	probeFn                = probe
	probeTimeout           = ProbeTimeout
	probeWarn    io.Writer = os.Stderr

	probePanicOnce sync.Once
)

// Probe reads device ordinal device's fingerprint. It loads
// $CONVCACHE_CUDA_LIBRARY (default libcuda.so.1) and $CONVCACHE_CUDNN_LIBRARY
// (default libcudnn.so.9, else libcudnn.so.8), preferring copies the
// process already loaded. Nothing is cached between calls, except that
// concurrent calls for the same device share one query. A driver that has
// not answered within ProbeTimeout gives an error wrapping ErrUnavailable.
func Probe(device int) (Device, error) {
	if device < 0 {
		return Device{}, fmt.Errorf("%w: device %d is negative", cache.ErrInvalid, device)
	}
	cudaLib, _ := config.LookupEnv("CONVCACHE_CUDA_LIBRARY")
	cudnnLib, _ := config.LookupEnv("CONVCACHE_CUDNN_LIBRARY")
	k := probeKey{device, cudaLib, cudnnLib}
	probeMu.Lock()
	call := inflight[k]
	if call == nil {
		call = &probeCall{done: make(chan struct{})}
		inflight[k] = call
		fn := probeFn
		go func() {
			// The probe calls into the CUDA driver and cuDNN. A panic here
			// (a Go bug, or a fault Go turns into one) is recovered, as
			// the exported functions recover theirs: this device reports
			// ErrUnavailable, one warning is printed, and later calls ask
			// again.
			defer func() {
				if r := recover(); r != nil {
					call.dev, call.err = Device{}, fmt.Errorf("%w: the device probe failed (%v)", ErrUnavailable, r)
					probePanicOnce.Do(func() {
						fmt.Fprintf(probeWarn, "convcache: the CUDA device probe failed with a panic (%v); its devices get no scope. Please report this line.\n", r)
					})
				}
				probeMu.Lock()
				delete(inflight, k)
				probeMu.Unlock()
				close(call.done)
			}()
			call.dev, call.err = fn(device, cudaLib, cudnnLib)
		}()
	}
	timeout := probeTimeout
	probeMu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-call.done:
		return call.dev, call.err
	case <-t.C:
		return Device{}, fmt.Errorf("%w: the CUDA driver did not answer within %v", ErrUnavailable, timeout)
	}
}
