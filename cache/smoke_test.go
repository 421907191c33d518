package cache_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/convcache/convcache/cache"
)

func TestSmoke(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.ccdb")
	c, err := cache.Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		if err := c.Insert([]byte(fmt.Sprint("k", i)), []byte(fmt.Sprint("v", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c2, err := cache.Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	for i := 0; i < 1000; i++ {
		v, ok, err := c2.Get([]byte(fmt.Sprint("k", i)))
		if err != nil || !ok || string(v) != fmt.Sprint("v", i) {
			t.Fatalf("%d: %q %v %v", i, v, ok, err)
		}
	}
	t.Logf("%+v", c2.Stats())
}
