package cudnn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/secenv"
)

// ScopeFormat is the leading field of every scope string Scope builds. It
// changes whenever the format does.
const ScopeFormat = "cc1"

// Scope returns the device's scope string in format ScopeFormat, with tag
// appended when it is not empty. It does not look at the environment.
func (d Device) Scope(tag string) string {
	var b strings.Builder
	b.WriteString(ScopeFormat)
	b.WriteString(";gpu=")
	b.WriteString(cleanName(d.Name))
	fmt.Fprintf(&b, ";cc=%d.%d;sms=%d;driver=%d;cudnn=%d;cudart=%d", d.Major, d.Minor, d.SMs, d.Driver, d.CuDNN, d.Cudart)
	if tag != "" {
		b.WriteString(";tag=")
		b.WriteString(tag)
	}
	return b.String()
}

// cleanName keeps a GPU name from imitating another field.
func cleanName(s string) string {
	s = strings.TrimSpace(s)
	return strings.Map(func(r rune) rune {
		if r == ';' || r == '=' || r < 0x20 || r == 0x7f {
			return '_'
		}
		return r
	}, s)
}

// Scope returns the scope for CUDA device ordinal device: $CONVCACHE_SCOPE
// when it is set and not empty, else the device's fingerprint with
// $CONVCACHE_TAG. It fails with an error wrapping ErrUnavailable when the
// driver, the device or cuDNN is missing, cache.ErrInvalid for a negative
// device, and cache.ErrSize when the result would be longer than
// cache.MaxScopeSize.
func Scope(device int) (string, error) {
	if device < 0 {
		return "", fmt.Errorf("%w: device %d is negative", cache.ErrInvalid, device)
	}
	return scopeOf(func() (Device, error) { return Probe(device) })
}

// ScopeFor returns the scope of a device already probed, as Scope does:
// $CONVCACHE_SCOPE when set, else d's fingerprint with $CONVCACHE_TAG.
func ScopeFor(d Device) (string, error) {
	return scopeOf(func() (Device, error) { return d, nil })
}

// Scopes returns the scopes of this machine's devices, as Scope names
// them, each once, in ordinal order: $CONVCACHE_SCOPE alone when it is set
// (no device is read), else each device's fingerprint with $CONVCACHE_TAG
// (devices of one model share one). It fails as Devices and Scope do.
func Scopes() ([]string, error) {
	var devs []Device
	first, err := scopeOf(func() (Device, error) {
		var err error
		if devs, _, err = Devices(); err != nil {
			return Device{}, err
		}
		return devs[0], nil
	})
	if err != nil {
		return nil, err
	}
	out := []string{first}
	for _, d := range devs { // none under $CONVCACHE_SCOPE
		s, err := ScopeFor(d)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// ScopeOverride returns $CONVCACHE_SCOPE, the scope of every device when
// it is set and not empty, and cache.ErrSize when it is longer than
// cache.MaxScopeSize.
func ScopeOverride() (string, error) {
	s := secenv.Get("CONVCACHE_SCOPE")
	if len(s) > cache.MaxScopeSize {
		return "", fmt.Errorf("%w: CONVCACHE_SCOPE is %d bytes, the limit is %d", cache.ErrSize, len(s), cache.MaxScopeSize)
	}
	return s, nil
}

// scopeOf is the scope rule, written once: $CONVCACHE_SCOPE when it is set
// and not empty (fingerprint is then not called: no device need exist),
// else the device fingerprint reads, with $CONVCACHE_TAG.
func scopeOf(fingerprint func() (Device, error)) (string, error) {
	if s, err := ScopeOverride(); s != "" || err != nil {
		return s, err
	}
	d, err := fingerprint()
	if err != nil {
		return "", err
	}
	s := d.Scope(secenv.Get("CONVCACHE_TAG"))
	if len(s) > cache.MaxScopeSize {
		return "", fmt.Errorf("%w: the scope with CONVCACHE_TAG is %d bytes, the limit is %d", cache.ErrSize, len(s), cache.MaxScopeSize)
	}
	return s, nil
}
