package vfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/convcache/convcache/internal/safefile"
)

// SaveDamaged writes each piece at its offset (holes between), with the
// given mode, keeps the newest KeepDamaged files, and leaves every other
// name alone, in a path that holds glob metacharacters too.
func TestSaveDamaged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a[b]*?")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "cache[1].ccdb")
	other := path + ".damaged-notes.txt" // not a name SaveDamaged makes
	if err := os.WriteFile(other, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	pieces := []Piece{{Off: 5000, Bytes: []byte("second")}, {Off: 100, Bytes: []byte("first")}}
	var names []string
	for i := 0; i < KeepDamaged+2; i++ {
		name, err := SaveDamaged(OS{}, path, safefile.Attrs{Perm: 0o640, GID: -1}, pieces)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	kept := DamagedFiles(OS{}, path)
	if len(kept) != KeepDamaged || kept[0] != names[2] || kept[KeepDamaged-1] != names[len(names)-1] {
		t.Fatalf("kept %q of %q", kept, names)
	}
	data, err := os.ReadFile(kept[0])
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 5006)
	copy(want[100:], "first")
	copy(want[5000:], "second")
	if !bytes.Equal(data, want) {
		t.Fatalf("%d bytes, not the pieces at their offsets", len(data))
	}
	if fi, _ := os.Stat(kept[0]); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "mine" {
		t.Fatalf("another file was touched: %q %v", b, err)
	}
}
