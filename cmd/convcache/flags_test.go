package main

import "testing"

func TestParseAge(t *testing.T) {
	for in, want := range map[string]string{"90m": "1h30m0s", "36h": "36h0m0s", "30d": "720h0m0s", "2w": "336h0m0s",
		"4d12h": "108h0m0s", "1.5d": "36h0m0s", "1w1d1h": "193h0m0s"} {
		d, err := parseAge(in)
		if err != nil || d.String() != want {
			t.Errorf("parseAge(%q) = %v, %v; want %s", in, d, err, want)
		}
	}
	for _, in := range []string{"", "soon", "-3d", "3x", "d", "1e9d", "5d-1h"} {
		if d, err := parseAge(in); err == nil {
			t.Errorf("parseAge(%q) = %v, want an error", in, d)
		}
	}
}
