// workloads.hpp - the benchmark workloads, written once for every
// implementation. Each worker binary (bench_<impl>) defines one Impl class and
// calls bench::run<Impl>(argc, argv). The runner (bench/runner) starts the
// workers, one process per measurement, and parses the line each prints.
//
// An Impl provides:
//
//   static constexpr const char *kName;       short name, as in the table
//   static constexpr bool kPersistent;        false: memory only (no file)
//   static constexpr bool kWarmEveryKey;      true: ask every key once before
//                                             the timed hit loops and the memory
//                                             reading (a store that may open
//                                             lazily: see do_hit)
//   static void ready();                      return once the process's
//                                             libraries have started (Go's
//                                             runtime starts on a thread of
//                                             its own): before the first RSS
//                                             reading
//   explicit Impl(const std::string &path);   open the store (not yet read)
//   int load();                               read the store (<0: error)
//   bool find(const Key &, Value *);          a hit copies the value out
//   int insert(const Key &, const Value &);   0 written, >0 kept in memory, <0 error
//   int save();                               make inserts durable (<0: error)
//   void begin_bulk(), end_bulk();            around the prep inserts only
//   void begin_writer();                      a writer process's start (the
//                                             naive file reads itself here)
//   void finish_prep(uint64_t n);             e.g. VACUUM; after prep's save
//   static void after_prep(const std::string &path);
//                                             e.g. compact; after it closed
//   struct Reader { Reader(Impl &); bool find(const Key &, Value *); };
//                                             one per thread for the hit loops
//
// Subcommands (all print one line of name=value fields on stdout):
//
//   init  PATH                create an empty store
//   prep  PATH N              fill a store with keys 0..N-1 (N >= 1), then
//                             save (and compact where the implementation can)
//   hit   PATH N MIN_MS       hits at 1 and 2 threads on a prepped store of N
//                             keys (memory-only implementations insert N keys
//                             first), in network order and, at 1 thread, in
//                             random order (see do_hit); also resident memory
//                             per entry. Every value a hit loop returns is
//                             checked (value_sum)
//   load  PATH N T0_NS        cold process to first answer, T0 being the
//                             runner's wall clock when it started us; then
//                             (2 <= N <= 100k) until all N keys were answered
//                             once
//   write PATH ID K           insert keys ID*K..ID*K+K-1; prints "ready",
//                             waits for a line on stdin, inserts, saves
//   count PATH TOTAL          how many of keys 0..TOTAL-1 the store returns
//                             with the right value
#ifndef CONVCACHE_BENCH_WORKLOADS_HPP
#define CONVCACHE_BENCH_WORKLOADS_HPP

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common.hpp"

namespace bench {

inline int64_t file_size(const std::string &p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 ? int64_t(st.st_size) : 0;
}

// finish prints the result line and leaves without running destructors: a
// hit or load measurement must not write to the prepped store on its way out
// (convcache's close records which entries were used; the naive file would
// save), so that every repeat reads the same file.
[[noreturn]] inline void finish(const std::string &line) {
    std::fputs(line.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    _exit(0);
}

inline std::string field(const char *name, double v) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s=%.6g ", name, v);
    return buf;
}

inline std::string field(const char *name, int64_t v) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s=%" PRId64 " ", name, v);
    return buf;
}

// Uniformly random draws from 0..n-1 (with replacement), the order in
// which the random-order hit loop asks.
inline std::vector<uint32_t> drawn(uint64_t n, uint64_t count, uint64_t seed) {
    std::vector<uint32_t> p(count);
    uint64_t s = seed;
    for (uint64_t i = 0; i < count; i++) {
        s = mix64(s + i + 1);
        p[i] = uint32_t((unsigned __int128)s * n >> 64);  // no modulo bias worth the name
    }
    return p;
}

// A deterministic shuffle of 0..n-1, the order in which the hit loops ask.
inline std::vector<uint32_t> shuffled(uint64_t n, uint64_t seed) {
    std::vector<uint32_t> p(n);
    for (uint64_t i = 0; i < n; i++) p[i] = uint32_t(i);
    uint64_t s = seed;
    for (uint64_t i = n; i > 1; i--) {
        s = mix64(s + i);
        std::swap(p[i - 1], p[s % i]);
    }
    return p;
}

template <class Impl>
int do_init(const std::string &path) {
    {
        Impl impl(path);
        if (impl.load() < 0) die("load");
        if (impl.save() < 0) die("save");
    }
    finish("ok=1");
}

template <class Impl>
int do_prep(const std::string &path, uint64_t n) {
    int64_t t0 = mono_ns();
    {
        Impl impl(path);
        if (impl.load() < 0) die("load");
        impl.begin_bulk();
        // A store this small stays under convcache's compaction floor (a
        // 4 KiB journal), and after_prep could not compact it as it does the
        // others: key 0 rewritten with another value and back grows the
        // journal past the floor. The loop below gives key 0 its own value
        // again, so the store still holds n entries, each with its value.
        if (n < 64) {
            for (int r = 0; r < 64; r++) {
                if (impl.insert(make_key(0), make_value(r % 2 ? 0 : 1)) < 0) die("insert", "0");
            }
            if (impl.insert(make_key(0), make_value(1)) < 0) die("insert", "0");
        }
        for (uint64_t i = 0; i < n; i++) {
            if (impl.insert(make_key(i), make_value(i)) < 0) die("insert", std::to_string(i));
        }
        impl.end_bulk();
        if (impl.save() < 0) die("save");
        impl.finish_prep(n);
    }  // closed: the file is complete
    Impl::after_prep(path);
    int64_t t1 = mono_ns();
    int64_t bytes = file_size(path) + file_size(path + "-wal");
    finish(field("prep_s", (t1 - t0) / 1e9) + field("file_bytes", bytes));
}

// value_sum folds every byte of a value into 64 bits: the hit loops add it
// up for each value returned, and the sum is compared with the one the
// inserted values give (Expected), so that every timed find is checked at
// the cost of a few multiplications on a value already in L1. A wrong value,
// a torn one or another key's differs in some word, which changes its term.
inline uint64_t value_sum(const Value &v) {
    static_assert(sizeof(Value) == 48, "six words");
    uint64_t w[6];
    std::memcpy(w, &v, sizeof w);
    return w[0] * 0x9E3779B97F4A7C15ULL + w[1] * 0xC2B2AE3D27D4EB4FULL +
           w[2] * 0x165667B19E3779F9ULL + w[3] * 0xD6E8FEB86659FD93ULL +
           w[4] * 0xFF51AFD7ED558CCDULL + w[5] * 0xC4CEB9FE1A85EC53ULL;
}

// Expected is the value_sum a run of finds over keys[start...] (cycling)
// must add up to: prefix sums of the inserted values, position i holding
// the value of key order[i].
struct Expected {
    std::vector<uint64_t> prefix;  // prefix[i]: the sum of positions 0..i-1

    explicit Expected(const std::vector<uint32_t> &order) : prefix(order.size() + 1) {
        for (size_t i = 0; i < order.size(); i++)
            prefix[i + 1] = prefix[i] + value_sum(make_value(order[i]));
    }
    // The sum of ops finds from position start on, wrapping at the end
    // (unsigned arithmetic: modulo 2^64, as the loops add).
    uint64_t run(uint64_t start, uint64_t ops) const {
        const uint64_t n = prefix.size() - 1;
        uint64_t s = start % n, sum = (ops / n) * prefix[n], rem = ops % n;
        if (s + rem <= n) return sum + prefix[s + rem] - prefix[s];
        return sum + prefix[n] - prefix[s] + prefix[s + rem - n];
    }
};

// One timed loop: ops finds over keys[start...], cycling. Returns the number
// of hits (which must be ops) and adds the value_sum of every value returned
// to *sum, which the caller checks against Expected::run.
template <class R>
inline uint64_t hit_loop(R &r, const std::vector<Key> &keys, uint64_t start, uint64_t ops,
                         uint64_t *sum) {
    const uint64_t n = keys.size();
    uint64_t i = start % n, hits = 0, acc = 0;
    Value v;
    for (uint64_t j = 0; j < ops; j++) {
        if (r.find(keys[i], &v)) {
            hits++;
            acc += value_sum(v);
        }
        if (++i == n) i = 0;
    }
    *sum += acc;
    return hits;
}

// check_values ends the run when a hit loop's values did not add up to the
// inserted ones: it names the first key that now answers wrong, if any.
template <class R>
void check_values(const char *where, uint64_t got, uint64_t want, R &r,
                  const std::vector<Key> &keys, const std::vector<uint32_t> &order) {
    if (got == want) return;
    for (size_t i = 0; i < keys.size(); i++) {
        Value v, w = make_value(order[i]);
        if (!r.find(keys[i], &v) || std::memcmp(&v, &w, sizeof v) != 0)
            die("wrong value", std::string(where) + ": key " + std::to_string(order[i]));
    }
    die("wrong value", std::string(where) + ": the values returned do not add up to the "
                                            "inserted ones (every key answers right afterwards)");
}

// timed_loop runs 1-thread hit loops over keys in chunks until min_ms has
// passed, checks every value against want, and returns the ns per find.
template <class R>
double timed_loop(R &r, const std::vector<Key> &keys, const std::vector<uint32_t> &order,
                  const Expected &want, int64_t min_ms, const char *where, uint64_t *ops) {
    const uint64_t chunk = 4096;
    uint64_t sum = 0, done = 0;
    int64_t t0 = mono_ns(), t1 = t0;
    while (t1 - t0 < min_ms * 1000000) {
        if (hit_loop(r, keys, done, chunk, &sum) != chunk) die("miss in hit loop", where);
        done += chunk;
        t1 = mono_ns();
    }
    check_values(where, sum, want.run(0, done), r, keys, order);
    *ops = done;
    return double(t1 - t0) / double(done);
}

// do_hit times hits in two orders, both after every key (or the first 100k)
// has been asked once in network order:
//
//   network order: the same shuffled order every pass, as a network asks its
//   layers' convolutions in the same order every step. convcache lays its
//   entries out in the order they are first asked, so this pass reads them
//   in memory order; PyTorch's map reads its nodes in insertion order,
//   which is another.
//
//   random order: keys drawn uniformly at random from all n, one draw per
//   find, so that no implementation's layout matches the order. The drawn
//   keys are copied into an array read front to back (as a caller's key is
//   on its stack), so that each find's random access is the store's own.
template <class Impl>
int do_hit(const std::string &path, uint64_t n, int64_t min_ms) {
    // The lookup orders, their keys and the expected sums exist, and the
    // libraries have started, before the first RSS reading, so the delta
    // counts the store alone.
    std::vector<uint32_t> order = shuffled(n, 0xC0FFEE);
    std::vector<Key> keys(n);
    for (uint64_t i = 0; i < n; i++) keys[i] = make_key(order[i]);
    const Expected want(order);
    std::vector<uint32_t> rorder = drawn(n, n, 0xD1CE);
    std::vector<Key> rkeys(n);
    for (uint64_t i = 0; i < n; i++) {
        rorder[i] = order[rorder[i]];
        rkeys[i] = make_key(rorder[i]);
    }
    const Expected rwant(rorder);
    Impl::ready();
    int64_t rss0 = rss_bytes();
    RssParts parts0 = rss_parts(path);

    std::unique_ptr<Impl> impl(new Impl(path));
    if (Impl::kPersistent) {
        if (impl->load() < 0) die("load");
    } else {
        for (uint64_t i = 0; i < n; i++) impl->insert(make_key(i), make_value(i));
    }
    {
        // Every key answers, with its own value (checked outside the timing).
        typename Impl::Reader r(*impl);
        for (uint64_t i = 0; i < std::min<uint64_t>(n, 2000); i++) {
            Value v;
            Value w = make_value(order[i]);
            if (!r.find(keys[i], &v)) die("miss", std::to_string(order[i]));
            if (std::memcmp(&v, &w, sizeof v) != 0) die("wrong value", std::to_string(order[i]));
        }
    }

    // 1 thread: warm up, then run chunks until min_ms has passed. A store
    // that may open lazily (convcache: the snapshot mapped, entries decoded
    // on demand or in the background) is asked every key once first, so
    // that the timed loop measures hits rather than the load, and so that
    // the RSS reading below holds the whole index, not the part touched.
    uint64_t ops1 = 0, opsr = 0;
    double ns1 = 0, nsr = 0;
    {
        typename Impl::Reader r(*impl);
        uint64_t warm = Impl::kWarmEveryKey ? n : std::min<uint64_t>(n, 100000), sum = 0;
        if (hit_loop(r, keys, 0, warm, &sum) != warm) die("miss in warm-up");
        check_values("warm-up", sum, want.run(0, warm), r, keys, order);
        ns1 = timed_loop(r, keys, order, want, min_ms, "1-thread hit loop", &ops1);
        nsr = timed_loop(r, rkeys, rorder, rwant, min_ms, "1-thread random-order hit loop", &opsr);
    }

    // 2 threads: each does ops1 finds, starting at opposite ends of the
    // order; aggregate throughput over the wall time both took.
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> thread_ns(2);
    std::vector<uint64_t> sums(2), warms(2);
    std::vector<std::thread> ts;
    const uint64_t warm2 = std::min<uint64_t>(n, 20000);
    for (int t = 0; t < 2; t++) {
        ts.emplace_back([&, t] {
            typename Impl::Reader r(*impl);
            if (hit_loop(r, keys, t * n / 2, warm2, &warms[t]) != warm2) die("miss in warm-up");
            ready++;
            while (!go.load(std::memory_order_acquire)) {
            }
            int64_t a = mono_ns();
            if (hit_loop(r, keys, t * n / 2, ops1, &sums[t]) != ops1) die("miss in hit loop");
            thread_ns[t] = double(mono_ns() - a) / double(ops1);
        });
    }
    while (ready.load() < 2) {
    }
    int64_t w0 = mono_ns();
    go.store(true, std::memory_order_release);
    for (auto &t : ts) t.join();
    int64_t w1 = mono_ns();
    double mops2 = 2.0 * double(ops1) / double(w1 - w0) * 1e3;

    // Resident memory: every page the process gained, anonymous (a heap,
    // Go's or C's) and file-backed (a mapped store counts in full, though
    // the page cache shares it). Two parts are reported beside it: the
    // store's mapped pages, and the shared libraries' pages touched since
    // rss0 (code run for the first time: a cost per process, not per entry).
    int64_t rss1 = rss_bytes();
    RssParts parts1 = rss_parts(path);
    {
        typename Impl::Reader r(*impl);
        for (int t = 0; t < 2; t++) {
            check_values("2-thread warm-up", warms[t], want.run(t * n / 2, warm2), r, keys, order);
            check_values("2-thread hit loop", sums[t], want.run(t * n / 2, ops1), r, keys, order);
        }
    }
    finish(field("hit1_ns", ns1) + field("hit1r_ns", nsr) + field("mops1", 1e3 / ns1) + field("mops2", mops2) +
           field("hit2_ns", (thread_ns[0] + thread_ns[1]) / 2) + field("ops", int64_t(ops1)) +
           field("rss_per_entry", double(rss1 - rss0) / double(n)) +
           field("rss_store_per_entry", double(parts1.store - parts0.store) / double(n)) +
           field("rss_libs_per_entry", double(parts1.libs - parts0.libs) / double(n)) +
           field("sink", int64_t((sums[0] + sums[1]) & 0xffff)));
}

template <class Impl>
int do_load(const std::string &path, uint64_t n, int64_t t0) {
    int64_t tm = real_ns();
    std::unique_ptr<Impl> impl(new Impl(path));
    if (impl->load() < 0) die("load");
    Value v;
    {
        typename Impl::Reader r(*impl);
        if (!r.find(make_key(0), &v)) die("miss on the first key");
        int64_t t1 = real_ns();
        Value w = make_value(0);
        if (std::memcmp(&v, &w, sizeof v) != 0) die("wrong value", "the first key");

        // Then every key once, in a shuffled order (generating the keys is
        // not timed), up to 100k entries: beyond, SQLite alone would take
        // tens of seconds. A 1-entry store has no second key to ask.
        if (n > 100000 || n < 2) {
            finish(field("load_ms", (t1 - t0) / 1e6) + field("inproc_ms", (t1 - tm) / 1e6));
        }
        std::vector<uint32_t> order = shuffled(n, 0xBEEF);
        std::vector<Key> keys(n);
        for (uint64_t i = 0; i < n; i++) keys[i] = make_key(order[i]);
        const Expected want(order);
        uint64_t sum = 0;
        int64_t t2 = mono_ns();
        if (hit_loop(r, keys, 0, n, &sum) != n) die("miss after load");
        int64_t t3 = mono_ns();
        check_values("every key once", sum, want.run(0, n), r, keys, order);
        finish(field("load_ms", (t1 - t0) / 1e6) + field("inproc_ms", (t1 - tm) / 1e6) +
               field("all_ms", ((t1 - t0) + (t3 - t2)) / 1e6) + field("sink", int64_t(sum & 0xff)));
    }
}

template <class Impl>
int do_write(const std::string &path, uint64_t id, uint64_t k) {
    std::unique_ptr<Impl> impl(new Impl(path));
    std::vector<Key> keys(k);
    std::vector<Value> vals(k);
    for (uint64_t j = 0; j < k; j++) {
        keys[j] = make_key(id * k + j);
        vals[j] = make_value(id * k + j);
    }
    std::fputs("ready\n", stdout);
    std::fflush(stdout);
    char line[16];
    if (!std::fgets(line, sizeof line, stdin)) die("no go line");

    int64_t t0 = real_ns();
    int64_t errors = 0, pending = 0;
    impl->begin_writer();
    for (uint64_t j = 0; j < k; j++) {
        int rc = impl->insert(keys[j], vals[j]);
        if (rc < 0) errors++;
        if (rc > 0) pending++;
    }
    if (impl->save() < 0) errors++;
    impl.reset();  // close is part of the work
    int64_t t1 = real_ns();
    std::string out = field("start_ns", t0) + field("end_ns", t1) + field("errors", errors) +
                      field("pending", pending);
    std::fputs(out.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    return 0;
}

template <class Impl>
int do_count(const std::string &path, uint64_t total) {
    std::unique_ptr<Impl> impl(new Impl(path));
    if (impl->load() < 0) die("load");
    typename Impl::Reader r(*impl);
    int64_t found = 0, wrong = 0;
    for (uint64_t i = 0; i < total; i++) {
        Value v;
        if (r.find(make_key(i), &v)) {
            Value want = make_value(i);
            if (std::memcmp(&v, &want, sizeof v) == 0)
                found++;
            else
                wrong++;
        }
    }
    finish(field("found", found) + field("wrong", wrong));
}

template <class Impl>
int run(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr,
                     "usage: %s init|prep|hit|load|write|count PATH [args]\n"
                     "  (see bench/workloads.hpp; the runner drives this)\n",
                     argv[0]);
        return 2;
    }
    std::string cmd = argv[1], path = argv[2];
    auto arg = [&](int i) -> int64_t {
        if (argc <= i) die("missing argument", cmd);
        return std::strtoll(argv[i], nullptr, 10);
    };
    if (cmd == "init") return do_init<Impl>(path);
    if (cmd == "prep") return do_prep<Impl>(path, uint64_t(arg(3)));
    if (cmd == "hit") return do_hit<Impl>(path, uint64_t(arg(3)), arg(4));
    if (cmd == "load") return do_load<Impl>(path, uint64_t(arg(3)), arg(4));
    if (cmd == "write") return do_write<Impl>(path, uint64_t(arg(3)), uint64_t(arg(4)));
    if (cmd == "count") return do_count<Impl>(path, uint64_t(arg(3)));
    die("unknown subcommand", cmd);
}

}  // namespace bench

#endif
