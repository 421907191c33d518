// Command gen writes every hostile cache file class (package
// internal/hostile) into a directory, one file per class, named
// CLASS.ccdb, for the harness and for shell or C tests.
//
//	gen [-scope NAME] [-scale F] [-only CLASS,...] DIR
//
// Each class is written at its default size times -scale. Entries meant to
// be visible use -scope (default "hostile"): point a reader at that scope
// (CONVCACHE_SCOPE) to make it decode them.
package main
