package cache

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// A cache on NFS (or Lustre, GPFS, CIFS...) warns once per process and says
// so in its stats; a local file system does not warn.
func TestNetworkFileSystem(t *testing.T) {
	old := statfsType
	defer func() { statfsType = old }()
	for _, fs := range []struct {
		magic   int64
		name    string
		network bool
	}{{0x6969, "nfs", true}, {0x0BD00BD0, "lustre", true}, {0x47504653, "gpfs", true}, {0xFF534D42, "cifs", true}, {0xEF53, "ext4", false}} {
		statfsType = func(string) (int64, error) { return fs.magic, nil }
		path := filepath.Join(t.TempDir(), "c.ccdb")
		var warn bytes.Buffer
		for i := 0; i < 3; i++ {
			c, err := Open(path, &Options{Warn: &warn})
			if err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			if st.FSType != fs.name || st.NetworkFS != fs.network {
				t.Fatalf("%s: stats say %q network=%v", fs.name, st.FSType, st.NetworkFS)
			}
			c.Close()
		}
		n := strings.Count(warn.String(), "network file system")
		if fs.network && n != 1 || !fs.network && n != 0 {
			t.Fatalf("%s: %d warnings: %q", fs.name, n, warn.String())
		}
	}
}
