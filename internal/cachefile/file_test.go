package cachefile_test

import (
	"os"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/cachefile"
)

func TestReadFileAndRewrite(t *testing.T) {
	e := newEnv(t)
	a := e.open(cache.Options{Scope: "gpu-a"})
	b := e.open(cache.Options{Scope: "gpu-b"})
	for i := 0; i < 30; i++ {
		mustInsert(t, a, key(i), val(i, 0))
	}
	for i := 0; i < 10; i++ {
		mustInsert(t, b, key(i), val(i, 1))
	}
	f, err := cachefile.ReadFile(e.path)
	if err != nil {
		t.Fatal(err)
	}
	sc := f.Scopes()
	if len(sc) != 2 || sc[0].Name != "gpu-a" || sc[0].Entries != 30 || sc[1].Name != "gpu-b" || sc[1].Entries != 10 {
		t.Fatalf("scopes %+v", sc)
	}
	es := f.Entries()
	if len(es) != 40 || es[0].Scope != "gpu-a" || string(es[0].Key) != string(key(0)) || es[0].Inserted.IsZero() {
		t.Fatalf("entries %d, first %+v", len(es), es[0])
	}
	if len(f.Damage) != 0 || f.JournalBytes == 0 {
		t.Fatalf("report %+v", f)
	}

	// A torn tail is told apart from a corrupt record.
	data, _ := os.ReadFile(e.path)
	torn := append(append([]byte(nil), data...), 0xE7, 'C', 'C', 'R', 1, 0, 0, 0, 50, 0, 0, 0)
	tf, _ := cachefile.DecodeFile("torn", torn)
	if len(tf.Damage) != 1 || !tf.Damage[0].Tail || len(tf.Corrupt()) != 0 {
		t.Fatalf("torn tail: %+v", tf.Damage)
	}
	flipped := append([]byte(nil), data...)
	flipped[100] ^= 1
	ff, _ := cachefile.DecodeFile("flipped", flipped)
	if len(ff.Corrupt()) != 1 || len(ff.Entries()) != 39 {
		t.Fatalf("flipped: %+v, %d entries", ff.Damage, len(ff.Entries()))
	}

	// Rewrite drops a scope; live handles see the new file.
	err = cachefile.Rewrite(e.path, time.Second, func(in []cachefile.Entry) ([]cachefile.Entry, error) {
		var out []cachefile.Entry
		for _, x := range in {
			if x.Scope != "gpu-b" {
				out = append(out, x)
			}
		}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mustMiss(t, b, key(99)) // a miss notices the replacement
	mustMiss(t, b, key(1))
	mustGet(t, a, key(29), val(29, 0))
	f2, _ := cachefile.ReadFile(e.path)
	if len(f2.Entries()) != 30 || f2.JournalBytes != 0 {
		t.Fatalf("after rewrite: %d entries, journal %d", len(f2.Entries()), f2.JournalBytes)
	}
	// WriteNew refuses to overwrite.
	if err := cachefile.WriteNew(e.path, nil); err == nil {
		t.Fatal("WriteNew overwrote a file")
	}
}
