package vfs

import "golang.org/x/sys/unix"

// Network and cluster file systems, by statfs magic. Their locks and rename
// depend on a server and are weaker than a local disk's.
var networkFS = map[int64]string{
	0x6969:     "nfs",
	0x517B:     "smb",
	0xFF534D42: "cifs",
	0xFE534D42: "smb2",
	0x0BD00BD0: "lustre",
	0x47504653: "gpfs",
	0x00C36400: "ceph",
	0x5346414F: "afs",
	0x01021997: "9p",
	0x19830326: "beegfs",
	0x65735546: "fuse",
	0x013111A8: "ibrix",
	0x6B414653: "kafs",
	0x564C:     "ncp",
	0x73757245: "coda",
	0x7461636F: "ocfs2",
	0x01161970: "gfs2",
}

var localFS = map[int64]string{
	0xEF53:     "ext4",
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x01021994: "tmpfs",
	0x794C7630: "overlay",
	0x2FC12FC1: "zfs",
	0xF2F52010: "f2fs",
}

// statfsType returns the statfs magic of the file system holding dir.
func statfsType(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Type) & 0xFFFFFFFF, nil
}

// TypeOf names the file system holding dir and reports whether it is a
// network or cluster file system.
func TypeOf(fsys FS, dir string) (name string, network bool) {
	t, err := fsys.StatfsType(dir)
	if err != nil {
		return "unknown", false
	}
	if n, ok := networkFS[t]; ok {
		return n, true
	}
	if n, ok := localFS[t]; ok {
		return n, false
	}
	return "other", false
}
