package vfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/convcache/convcache/internal/errs"
	"github.com/convcache/convcache/internal/safefile"
)

// Resolve makes a cache path absolute and follows the links at its final
// component that may be followed (safefile.Resolve: those this user or root
// owns). refused, when not nil, is why a link was not followed (the path
// returned is then the link's). A path that is a directory is ErrInvalid.
// The engine opens, and the tools lock and replace, the path it returns.
func Resolve(path string) (p string, refused, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, fmt.Errorf("%w: cache path %q: %v", errs.ErrInvalid, path, err)
	}
	p, err = safefile.Resolve(abs)
	if err != nil {
		if !errors.Is(err, safefile.ErrRefused) {
			return "", nil, errs.IO(err, "resolve", abs, "")
		}
		refused = err
	}
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return "", nil, fmt.Errorf("%w: cache path %s is a directory: name a file inside it", errs.ErrInvalid, p)
	}
	return p, refused, nil
}
