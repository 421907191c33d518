package cache

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convcache/convcache/internal/vfs"
)

// statfsFS is the real file system on a file system of another type: there
// is no NFS server to mount here.
type statfsFS struct {
	vfs.OS
	magic int64
}

func (f statfsFS) StatfsType(string) (int64, error) { return f.magic, nil }

// A cache on NFS (or Lustre, GPFS, CIFS...) warns once per process and says
// so in its stats; a local file system does not warn.
func TestNetworkFileSystem(t *testing.T) {
	for _, fs := range []struct {
		magic   int64
		name    string
		network bool
	}{{0x6969, "nfs", true}, {0x0BD00BD0, "lustre", true}, {0x47504653, "gpfs", true}, {0xFF534D42, "cifs", true}, {0xEF53, "ext4", false}} {
		path := filepath.Join(t.TempDir(), "c.ccdb")
		var warn bytes.Buffer
		for i := 0; i < 3; i++ {
			c, err := Open(path, &Options{Warn: &warn, fs: statfsFS{magic: fs.magic}})
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
