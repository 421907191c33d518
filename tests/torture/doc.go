// Command torture is convcache's crash-torture harness.
//
// It runs writer processes (tests/torture_writer.c, linked against the real
// libconvcache.so) that insert, call get_or_create and save on one cache
// file, and SIGKILLs them at random moments, restarting each, until it has
// killed -kills of them. Compaction is made frequent
// (CONVCACHE_COMPACT_JOURNAL) so kills land in compactions too.
//
// Then it checks, reading the file independently with package cache:
//   - the file loads without error and a verify pass finds no corrupt
//     record (a torn tail from the last kill is allowed and reported);
//   - every insert that returned 0 before its process died is present with
//     its exact value;
//   - no key holds a value that was never inserted for it.
//
// Exit status 0 means every check passed. `make test` runs a short version;
// `make torture` the long one. The temporary directory is removed and every
// child killed on every exit path: a failure, SIGINT, SIGTERM or SIGHUP; and
// the children die with the harness (Pdeathsig) even if it is SIGKILLed.
package main
