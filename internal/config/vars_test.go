package config

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
)

// parseCase is one value of a variable: what it parses to and whether it
// warns (a warning always comes with the default).
type parseCase[T comparable] struct {
	value string
	unset bool // the variable is not set at all
	want  T
	warns bool
}

func checkParse[T comparable](t *testing.T, name string, cases []parseCase[T], parse func(vars) T) {
	t.Helper()
	for _, tc := range cases {
		env := map[string]string{name: tc.value}
		if tc.unset {
			env = nil
		}
		v, w := varsOf(t, env)
		got := parse(v)
		if got != tc.want {
			t.Errorf("%s=%q: %v, want %v", name, tc.value, got, tc.want)
		}
		if n := lines(w); n != map[bool]int{false: 0, true: 1}[tc.warns] {
			t.Errorf("%s=%q: %d warnings, want warns=%v: %q", name, tc.value, n, tc.warns, w.String())
		}
		if tc.warns && !strings.Contains(w.String(), "ignoring "+name+"=") {
			t.Errorf("%s=%q: the warning does not name the variable: %q", name, tc.value, w.String())
		}
	}
}

func TestBool(t *testing.T) {
	for _, def := range []bool{false, true} {
		checkParse(t, "CONVCACHE_X", []parseCase[bool]{
			{unset: true, want: def},
			{value: "", want: def},
			{value: "  \t", want: def},
			{value: "1", want: true},
			{value: "true", want: true},
			{value: " TRUE ", want: true},
			{value: "Yes", want: true},
			{value: "on", want: true},
			{value: "y", want: true},
			{value: "0", want: false},
			{value: "False", want: false},
			{value: "NO", want: false},
			{value: "off\n", want: false},
			{value: "n", want: false},
			{value: "2", want: def, warns: true},
			{value: "-1", want: def, warns: true},
			{value: "enabled", want: def, warns: true},
			{value: "t", want: def, warns: true},
			{value: "1 1", want: def, warns: true},
		}, func(v vars) bool { return v.Bool("CONVCACHE_X", def) })
	}
}

func TestInt(t *testing.T) {
	checkParse(t, "CONVCACHE_X", []parseCase[int64]{
		{unset: true, want: 7},
		{value: "", want: 7},
		{value: "16", want: 16},
		{value: " 100 ", want: 100},
		{value: "+20", want: 20},
		{value: "1000", want: 1000},         // the upper bound
		{value: "0016", want: 16},           // leading zeros: decimal, not octal
		{value: "15", want: 7, warns: true}, // below the lower bound
		{value: "1001", want: 7, warns: true},
		{value: "-16", want: 7, warns: true},
		{value: "9223372036854775808", want: 7, warns: true}, // overflows int64
		{value: "1e2", want: 7, warns: true},
		{value: "0x20", want: 7, warns: true},
		{value: "20K", want: 7, warns: true},
		{value: "20.0", want: 7, warns: true},
		{value: "twenty", want: 7, warns: true},
	}, func(v vars) int64 { return v.Int("CONVCACHE_X", 16, 1000, 7) })
	// The whole int64 range, where asked for.
	checkParse(t, "CONVCACHE_X", []parseCase[int64]{
		{value: strconv.FormatInt(math.MaxInt64, 10), want: math.MaxInt64},
		{value: strconv.FormatInt(math.MinInt64, 10), want: math.MinInt64},
	}, func(v vars) int64 { return v.Int("CONVCACHE_X", math.MinInt64, math.MaxInt64, 0) })
}

func TestBytes(t *testing.T) {
	checkParse(t, "CONVCACHE_X", []parseCase[int64]{
		{unset: true, want: 0},
		{value: "", want: 0},
		{value: "65536", want: 64 << 10},
		{value: "64K", want: 64 << 10},
		{value: "64kib", want: 64 << 10},
		{value: " 512M ", want: 512 << 20},
		{value: "2G", want: 2 << 30},
		{value: "2gb", want: 2 << 30},
		{value: "1T", want: 1 << 40}, // the upper bound
		{value: "63K", want: 0, warns: true},
		{value: "1025G", want: 0, warns: true},
		{value: "-64K", want: 0, warns: true},
		{value: "1.5G", want: 0, warns: true},
		{value: "99999999999999999999", want: 0, warns: true},
		{value: "64Q", want: 0, warns: true},
		{value: "lots", want: 0, warns: true},
	}, func(v vars) int64 { return v.Bytes("CONVCACHE_X", 64<<10, 1<<40, 0) })
}

func TestDuration(t *testing.T) {
	checkParse(t, "CONVCACHE_X_MS", []parseCase[time.Duration]{
		{unset: true, want: 5 * time.Second},
		{value: "", want: 5 * time.Second},
		{value: "1", want: time.Millisecond},
		{value: "250", want: 250 * time.Millisecond},
		{value: " 3600000 ", want: time.Hour},
		{value: "0", want: 5 * time.Second, warns: true},
		{value: "3600001", want: 5 * time.Second, warns: true},
		{value: "-5", want: 5 * time.Second, warns: true},
		{value: "5s", want: 5 * time.Second, warns: true}, // milliseconds, no unit
		{value: "1.5", want: 5 * time.Second, warns: true},
		{value: "9223372036854775807", want: 5 * time.Second, warns: true},
	}, func(v vars) time.Duration { return v.Duration("CONVCACHE_X_MS", 1, 3_600_000, 5*time.Second) })
}

func TestMode(t *testing.T) {
	checkParse(t, "CONVCACHE_MODE", []parseCase[cache.Mode]{
		{unset: true, want: cache.ModeReadWrite},
		{value: "", want: cache.ModeReadWrite},
		{value: "rw", want: cache.ModeReadWrite},
		{value: "ro", want: cache.ModeReadOnly},
		{value: " RO ", want: cache.ModeReadOnly},
		{value: "off", want: cache.ModeOff},
		{value: "Recache", want: cache.ModeRecache},
		{value: "STRICT", want: cache.ModeStrict},
		{value: "read-only", want: cache.ModeReadWrite, warns: true},
		{value: "1", want: cache.ModeReadWrite, warns: true},
		{value: "r o", want: cache.ModeReadWrite, warns: true},
	}, func(v vars) cache.Mode { return v.Mode(nil) })

	// CONVCACHE_DISABLE wins over CONVCACHE_MODE and over a caller's mode;
	// a caller's mode wins over CONVCACHE_MODE, which is then not read.
	strict := cache.ModeStrict
	for _, tc := range []struct {
		disable, mode string
		caller        *cache.Mode
		want          cache.Mode
		warnings      int
	}{
		{"1", "rw", nil, cache.ModeOff, 0},
		{"yes", "", &strict, cache.ModeOff, 0},
		{"1", "bogus", nil, cache.ModeOff, 0}, // off before CONVCACHE_MODE is read
		{"0", "ro", nil, cache.ModeReadOnly, 0},
		{"0", "ro", &strict, cache.ModeStrict, 0},
		{"", "bogus", &strict, cache.ModeStrict, 0},
		{"maybe", "ro", nil, cache.ModeReadOnly, 1},
		{"maybe", "bogus", nil, cache.ModeReadWrite, 2},
	} {
		v, w := varsOf(t, map[string]string{"CONVCACHE_DISABLE": tc.disable, "CONVCACHE_MODE": tc.mode})
		if got := v.Mode(tc.caller); got != tc.want || lines(w) != tc.warnings {
			t.Errorf("DISABLE=%q MODE=%q caller %v: %v with %d warnings, want %v with %d: %q",
				tc.disable, tc.mode, tc.caller, got, lines(w), tc.want, tc.warnings, w.String())
		}
	}
}

// A nonsense value warns once per process, however often it is read; each
// distinct value warns once.
func TestWarnOnce(t *testing.T) {
	env := map[string]string{"CONVCACHE_X": "fast"}
	v, w := varsOf(t, env)
	for i := 0; i < 3; i++ {
		v.Int("CONVCACHE_X", 0, 10, 1)
	}
	env["CONVCACHE_X"] = "faster"
	for i := 0; i < 3; i++ {
		v.Int("CONVCACHE_X", 0, 10, 1)
	}
	want := "convcache: ignoring CONVCACHE_X=\"fast\": expected an integer from 0 to 10; using 1\n" +
		"convcache: ignoring CONVCACHE_X=\"faster\": expected an integer from 0 to 10; using 1\n"
	if w.String() != want {
		t.Fatalf("warnings %q, want %q", w.String(), want)
	}
}
