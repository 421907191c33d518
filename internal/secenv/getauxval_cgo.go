//go:build cgo && linux

package secenv

/*
#include <sys/auxv.h>
*/
import "C"

// getauxvalSecure asks the C library, which has the kernel's vector
// whatever the build mode (a Go runtime loaded as a shared library may not).
func getauxvalSecure() (secure, ok bool) {
	return C.getauxval(C.AT_SECURE) != 0, true
}
