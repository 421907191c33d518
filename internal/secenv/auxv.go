package secenv

import (
	"encoding/binary"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// atSecure is the auxiliary vector's AT_SECURE tag (elf.h).
const atSecure = 23

// runtimeAuxvSecure reads AT_SECURE from the Go runtime's copy of the
// auxiliary vector (absent in some build modes).
func runtimeAuxvSecure() (secure, ok bool) {
	vec, err := unix.Auxv()
	if err != nil {
		return false, false
	}
	for _, kv := range vec {
		if kv[0] == atSecure {
			return kv[1] != 0, true
		}
	}
	return false, false
}

// procAuxvSecure reads AT_SECURE from /proc/self/auxv. (A privileged
// process often may not read it: its /proc files belong to root.)
func procAuxvSecure() (secure, ok bool) {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return false, false
	}
	return parseAuxv(b)
}

// parseAuxv finds AT_SECURE in a raw auxiliary vector: pairs of native
// words, ending with AT_NULL.
func parseAuxv(b []byte) (secure, ok bool) {
	const w = int(unsafe.Sizeof(uintptr(0)))
	word := func(p []byte) uint64 {
		if w == 8 {
			return binary.NativeEndian.Uint64(p)
		}
		return uint64(binary.NativeEndian.Uint32(p))
	}
	for i := 0; i+2*w <= len(b); i += 2 * w {
		switch tag := word(b[i:]); tag {
		case 0:
			return false, false
		case atSecure:
			return word(b[i+w:]) != 0, true
		}
	}
	return false, false
}

// idsDiffer is the last resort: a set-ID program runs with effective ids
// other than its real ones. (It misses file capabilities.)
func idsDiffer() bool {
	return os.Getuid() != os.Geteuid() || os.Getgid() != os.Getegid()
}
