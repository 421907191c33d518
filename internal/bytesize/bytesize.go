package bytesize

import (
	"strconv"
	"strings"
)

// Parse reads a byte count: a decimal integer with an optional K, M, G or
// T suffix (optionally followed by B or iB), any case, spaces around
// ignored, in powers of 1024. ok is false for anything else, a negative
// count, and a count above 2^62 bytes.
func Parse(v string) (n int64, ok bool) {
	s := strings.ToUpper(strings.TrimSpace(v))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "IB"), "B")
	mult := int64(1)
	if len(s) > 0 {
		switch s[len(s)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, false
	}
	return n * mult, true
}

// Format writes n as "0 B", "512 B", "1.5 KiB", "24.0 MiB": bytes below
// 1 KiB, else one decimal of the largest unit (up to EiB) it reaches.
func Format(n uint64) string {
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f := float64(n) / 1024
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + units[i]
}
