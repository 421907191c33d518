// Package safefile opens the files convcache shares with other users and
// processes (the cache file, its lock file, the verbose log) the way ccache
// and sqlite do in shared directories such as /tmp, a group project
// directory or an NFS volume, where another user may plant a file, a
// symbolic link or a FIFO at any of those paths, before or during our use.
//
// The rules, each written once here:
//
//   - Links. A symbolic link at the final component of a path is followed
//     only when this user (the effective uid) or root owns it, hop by hop,
//     at most MaxLinks hops (Resolve); otherwise it is refused. Every open
//     then uses O_NOFOLLOW on the final component, so a link that appears
//     after Resolve is refused too. Directories above the final component
//     are resolved by the kernel, under its own protected_symlinks rule.
//   - Files. The opened file is checked with fstat (Check): it must be a
//     regular file (the log may also be a character device, such as a
//     terminal), owned by this user or root, and not writable by group or
//     others. Policy.TrustShared (CONVCACHE_TRUST_SHARED=1) lifts the owner
//     and mode checks, for a cache shared on purpose; never the type or the
//     link check. Every open uses O_NONBLOCK, so a FIFO at the path cannot
//     block it before the check refuses it.
//   - New files are created with O_EXCL (a file or link that appeared in
//     the meantime is opened and checked instead) and get mode 0600. With
//     TrustShared, in a directory its group may write, they get mode 0660
//     whatever the umask, and the directory's group (NewFileAttrs): the
//     members of a group-shared cache can all use what any of them made.
//
// Root counts as a trusted owner: root can write every file anyway, and
// caches shipped in images (CONVCACHE_SYSTEM_PATH) are root's.
package safefile
