package bytesize_test

import (
	"math"
	"testing"

	"github.com/convcache/convcache/internal/bytesize"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1048576", 1 << 20, true},
		{"512K", 512 << 10, true},
		{"512k", 512 << 10, true},
		{"512KB", 512 << 10, true},
		{"512KiB", 512 << 10, true},
		{"512kib", 512 << 10, true},
		{"64M", 64 << 20, true},
		{"64mb", 64 << 20, true},
		{"2G", 2 << 30, true},
		{"2GiB", 2 << 30, true},
		{"1T", 1 << 40, true},
		{"100B", 100, true},
		{"  64M\t\n", 64 << 20, true},
		{"64 M", 64 << 20, true}, // a space before the suffix
		{"+5", 5, true},
		{"0G", 0, true},
		// The bound: 2^62 bytes, whatever the suffix.
		{"4611686018427387904", 1 << 62, true},
		{"4611686018427387905", 0, false},
		{"4194304T", 1 << 62, true},
		{"4194305T", 0, false},
		{"9223372036854775807", 0, false},
		{"99999999999999999999", 0, false}, // overflows int64
		{"9223372036854775807K", 0, false},
		// Not a count.
		{"", 0, false},
		{"  ", 0, false},
		{"B", 0, false},
		{"K", 0, false},
		{"KiB", 0, false},
		{"-1", 0, false},
		{"-1K", 0, false},
		{"1.5G", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"5P", 0, false},
		{"5KK", 0, false},
		{"5BB", 0, false},
		{"M5", 0, false},
		{"five", 0, false},
	} {
		n, ok := bytesize.Parse(tc.in)
		if n != tc.want || ok != tc.ok {
			t.Errorf("Parse(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.want, tc.ok)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		in   uint64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{512, "512 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{25 << 20, "25.0 MiB"},
		{24<<20 + 100<<10, "24.1 MiB"},
		{3 << 30, "3.0 GiB"},
		{5 << 40, "5.0 TiB"},
		{7 << 50, "7.0 PiB"},
		{1 << 60, "1.0 EiB"},
		{math.MaxUint64, "16.0 EiB"},
	} {
		if got := bytesize.Format(tc.in); got != tc.want {
			t.Errorf("Format(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
