package main

import (
	"strings"
	"testing"
)

func TestDoctorEnableFinding(t *testing.T) {
	for _, c := range []struct {
		src, status, want string
	}{
		{"import convcache\nconvcache.enable(path='/tmp/c.ccdb')\nimport torch\n", statusOK, "line 2, before it imports torch at line 3"},
		{"import convcache\nconvcache.enable()\n", statusOK, "line 2, before it imports torch:"},
		{"import os, torch\nimport convcache\nconvcache.enable()\n", statusWarning, "line 3, after it imports torch at line 1"},
		{"from torch import nn\nimport convcache; convcache.enable()\n", statusWarning, "after it imports torch at line 1"},
		{"import convcache\n# convcache.enable()\ns = 'convcache.enable()'\nimport torch\n", "", ""},
	} {
		f, ok := scanScript("t.py", strings.NewReader(c.src)).enableFinding()
		if c.status == "" {
			if ok {
				t.Errorf("%q: a finding %+v for an enable() in a comment or a string", c.src, f)
			}
			continue
		}
		if !ok || f.Status != c.status || !strings.Contains(f.Summary, c.want) {
			t.Errorf("%q: got %v %+v, want %s with %q", c.src, ok, f, c.status, c.want)
		}
	}
	var none *scriptFacts
	if _, ok := none.enableFinding(); ok {
		t.Error("a finding without a script")
	}
}
