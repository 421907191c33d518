// convcache_prep.hpp - what implementations (a) and (b) share: leaving a
// filled store fully compacted, for the file-bytes-per-entry figure, and
// waiting for the Go runtime's start before the resident memory is read.
//
// The runner fills stores with CONVCACHE_COMPACT_JOURNAL=1T, so the fill is
// plain appends; with the default threshold a fill compacts many times on
// the way (see docs/performance.md), which costs the set-up time but changes
// nothing in the final file. After the filling handle closed, a fresh handle
// with a 4 KiB threshold opens the file and calls convcache_save, which
// compacts because the journal exceeds both the threshold and the (empty)
// snapshot: the same compaction every save runs once the journal passes
// 4 MiB.
#ifndef CONVCACHE_BENCH_CONVCACHE_PREP_HPP
#define CONVCACHE_BENCH_CONVCACHE_PREP_HPP

#include <cstdlib>
#include <cstring>
#include <string>

#include "common.hpp"
#include "convcache.h"

namespace bench {

inline void compact_convcache(const std::string &path, const char *scope) {
    setenv("CONVCACHE_COMPACT_JOURNAL", "4K", 1);
    convcache_handle *c = nullptr;
    if (convcache_open(path.c_str(), scope, &c) != CONVCACHE_OK)
        die("convcache_open", convcache_last_error());
    if (convcache_save(c) != CONVCACHE_OK) die("convcache_save", convcache_last_error());
    struct convcache_stats st;
    std::memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    if (convcache_stats(c, &st) != CONVCACHE_OK) die("convcache_stats");
    if (st.compactions == 0 || st.journal_bytes != 0)
        die("the store did not compact", std::to_string(st.journal_bytes) + " journal bytes left");
    convcache_close(c);
    unsetenv("CONVCACHE_COMPACT_JOURNAL");
}

// runtime_ready returns once libconvcache.so's Go runtime has started. The
// library starts it when it is loaded, on a thread of its own, while the
// program goes on; the first call into Go waits for it. The hit workload
// reads the resident memory before it opens the store only after this, so
// that the delta holds the store and not a varying part of the runtime's
// start (up to about 9 MB of code and heap, a cost per process: 90 bytes per
// entry at 100k entries), as a C++ process's libraries are started before
// its main. A handle in mode off (no file, no remote) is the cheapest call
// into Go.
inline void runtime_ready() {
    convcache_options o;
    convcache_options_init(&o);
    o.mode = CONVCACHE_MODE_OFF;
    o.remote = "";
    convcache_handle *c = nullptr;
    if (convcache_open_ex(&o, &c) != CONVCACHE_OK) die("convcache_open_ex (mode off)", convcache_last_error());
    convcache_close(c);
}

}  // namespace bench

#endif
