// Command harness runs every hostile cache file class (internal/hostile)
// through the library, the command-line tool and the LD_PRELOAD
// interposer, each in a child process under a memory and a time limit, and
// prints a table. `make hostile-test` runs it; it exits 1 if any run
// failed.
//
//	harness [-build DIR] [-only CLASS,...] [-scale F] [-keep]
//
// For each class, written at its default size times -scale, with the
// reader's entries in scope "hostile":
//
//   - lib: tests/hostile/libprog (linked to DIR/libconvcache.so) opens a
//     copy, finds, inserts, saves with CONVCACHE_COMPACT_JOURNAL=1 and
//     CONVCACHE_MAX_BYTES=65536 (so the save compacts), loads, reopens and
//     finds its entries again;
//   - verify, ls, dump, stats: DIR/convcache on the file (exit 0, or 1 for
//     damage found);
//   - compact: DIR/convcache compact on a copy, then verify of the result,
//     which must find no damage;
//   - preload: the stand-in cuDNN program DIR/tests/preload/preload_prog
//     under LD_PRELOAD=DIR/libconvcache_preload.so with CONVCACHE_PATH on a
//     copy, twice: both runs exit 0 with the results of a run without the
//     interposer, and the second reaches cuDNN's find zero times.
//
// Every run must stay under 64 MiB + 40 x the file's size of peak resident
// memory (wait4's ru_maxrss, measured by tests/hostile/rss) and under
// 10 s + 2 s per MiB of the file; a run past its time is killed. Passing a
// -build of another version (its library, tool and interposer) shows how
// that version fares.
package main
