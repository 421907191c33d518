// Package asuser lets a test run part of itself as another user: as a
// group member, as an attacker who plants files, or as a setuid program.
// The running test binary is copied to a directory every user may enter,
// and the copy is started with other credentials and -test.run naming a
// helper test, which does its part when Helper says so.
//
// It needs root (to switch users and to chown); tests skip without it.
// Nothing here is part of the library.
package asuser
