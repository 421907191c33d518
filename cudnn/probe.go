package cudnn

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/secenv"
)

// ProbeTimeout bounds how long Probe waits for the CUDA driver.
const ProbeTimeout = 30 * time.Second

// MaxDevices bounds the device ordinals Devices asks for.
const MaxDevices = 64

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
	cudaLib := secenv.Get("CONVCACHE_CUDA_LIBRARY")
	cudnnLib := secenv.Get("CONVCACHE_CUDNN_LIBRARY")
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

// Devices reads the fingerprint of every CUDA device, in ordinal order, up
// to MaxDevices. It fails (wrapping ErrUnavailable) when device 0 cannot be
// read. The list ends at the first ordinal past the last device
// (ErrNoDevice); a later device that fails for another reason ends it too,
// and that failure is returned in partial.
func Devices() (devs []Device, partial error, err error) {
	for i := 0; i < MaxDevices; i++ {
		d, err := Probe(i)
		if err != nil {
			if i == 0 {
				return nil, nil, err
			}
			if errors.Is(err, ErrNoDevice) { // past the last device
				break
			}
			return devs, fmt.Errorf("device %d: %w", i, err), nil
		}
		devs = append(devs, d)
	}
	return devs, nil, nil
}
