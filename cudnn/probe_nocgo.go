//go:build !cgo

package cudnn

import "fmt"

func probe(device int, cudaLib, cudnnLib string) (Device, error) {
	return Device{}, fmt.Errorf("%w: built without cgo, convcache cannot load the CUDA driver", ErrUnavailable)
}
