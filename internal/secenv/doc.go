// Package secenv is the one place convcache reads its environment, with
// the semantics of glibc's secure_getenv: in a privileged process (AT_SECURE:
// set-user-ID, set-group-ID, or file capabilities) every variable reads as
// unset, because the environment belongs to whoever started the program.
// A CONVCACHE_CUDA_LIBRARY, CONVCACHE_PATH or CONVCACHE_LOG chosen by that
// user must not make a privileged program load a library, or create and
// append to files, with the program's privileges.
//
// AT_SECURE comes from getauxval where cgo is available, else from the Go
// runtime's copy of the auxiliary vector, else from /proc/self/auxv, else
// from comparing the real and effective user and group ids.
package secenv
