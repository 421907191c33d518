//go:build cgo

package cudnn

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "probe.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

func probe(device int, cudaLib, cudnnLib string) (Device, error) {
	var ccuda, ccudnn *C.char
	if cudaLib != "" {
		ccuda = C.CString(cudaLib)
		defer C.free(unsafe.Pointer(ccuda))
	}
	if cudnnLib != "" {
		ccudnn = C.CString(cudnnLib)
		defer C.free(unsafe.Pointer(ccudnn))
	}
	var out C.ccn_device
	var msg [1024]C.char
	rc := C.ccn_probe(C.int(device), ccuda, ccudnn, &out, &msg[0], C.size_t(len(msg)))
	if rc == C.CCN_NO_DEVICE {
		return Device{}, fmt.Errorf("%w: %s", ErrNoDevice, C.GoString(&msg[0]))
	}
	if rc != C.CCN_OK {
		return Device{}, fmt.Errorf("%w: %s", ErrUnavailable, C.GoString(&msg[0]))
	}
	return Device{
		Ordinal: device,
		Name:    C.GoString(&out.name[0]),
		Major:   int(out.major),
		Minor:   int(out.minor),
		SMs:     int(out.sms),
		Driver:  int(out.driver),
		CuDNN:   uint64(out.cudnn),
		Cudart:  uint64(out.cudart),
	}, nil
}
