//go:build !cgo || !linux

package secenv

func getauxvalSecure() (secure, ok bool) { return false, false }
