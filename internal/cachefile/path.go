package cachefile

import (
	"errors"
	"fmt"
	"os"

	"github.com/convcache/convcache/internal/errs"
	"github.com/convcache/convcache/internal/safefile"
	"github.com/convcache/convcache/internal/vfs"
)

// ResolvePath returns the file a cache path names, as Open resolves it: an
// absolute path whose final component is followed through the symbolic
// links that this user or root owns, so that tools lock and replace the
// same file (and the same lock file) as the engine does. A link owned by
// anyone else is not followed: ResolvePath fails with errs.ErrAccess (Open, for
// its part, opens a handle that does not use the file). Directories above
// the final component are left to the kernel. A path that does not exist
// yet is made absolute only; one that is a directory, or not a regular
// file, is refused with errs.ErrInvalid.
func ResolvePath(path string) (string, error) {
	p, refused, err := vfs.Resolve(path)
	if err != nil {
		return "", err
	}
	if refused != nil {
		return "", refusal(refused, "")
	}
	if fi, err := os.Stat(p); err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: cache path %s is not a regular file", errs.ErrInvalid, p)
	}
	return p, nil
}

// refusal is the tools' error for a path or file the trust rules refuse
// (errs.ErrAccess), with what to do.
func refusal(err error, what string) error {
	hint := ""
	var re *safefile.RefusedError
	if errors.As(err, &re) {
		hint = "; " + re.Hint()
	}
	if what != "" {
		what = ": " + what
	}
	return errs.Detail(errs.ErrAccess, err.Error()+what+hint)
}
