package cache

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePages asks the kernel to back the 2 MiB-aligned part of b with
// transparent huge pages. A lookup in a large index touches a random table
// slot and a random arena entry; with 4 KiB pages each is usually a TLB
// miss, a cost the hit path pays on every call. It must run before b is
// first written, while its pages are not yet faulted in. Failure is
// harmless: the kernel may not offer huge pages at all.
func hugePages(b []byte) {
	const huge = 2 << 20
	if len(b) < huge {
		return
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	skip := int((start+huge-1)&^(huge-1) - start) // to the first 2 MiB boundary
	n := (len(b) - skip) &^ (huge - 1)
	if skip >= len(b) || n <= 0 {
		return
	}
	unix.Madvise(b[skip:skip+n], unix.MADV_HUGEPAGE)
}
