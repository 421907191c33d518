// workloads.hpp - the benchmark workloads, written once for every
// implementation. Each worker binary (bench_<impl>) defines one Impl class and
// calls bench::run<Impl>(argc, argv). The runner (bench/runner) starts the
// workers, one process per measurement, and parses the line each prints.
//
// An Impl provides:
//
//   static constexpr const char *kName;       short name, as in the table
//   static constexpr bool kPersistent;        false: memory only (no file)
//   static constexpr bool kFillsOnFind;       true: a first find fills a
//                                             front map (warm up every key)
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
//   prep  PATH N              fill a store with keys 0..N-1, then save
//                             (and compact where the implementation can)
//   hit   PATH N MIN_MS       hits at 1 and 2 threads on a prepped store of N
//                             keys (memory-only implementations insert N keys
//                             first); also resident memory per entry
//   load  PATH N T0_NS        cold process to first answer, T0 being the
//                             runner's wall clock when it started us; then
//                             (N <= 100k) until all N keys were answered once
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
#include <type_traits>
#include <utility>
#include <vector>

#include "common.hpp"

namespace bench {

// Implementations with a front map of their own (the C++ drop-in) report
// its size: int64_t front_bytes() const.
template <class T, class = void>
struct has_front_bytes : std::false_type {};
template <class T>
struct has_front_bytes<T, std::void_t<decltype(std::declval<const T &>().front_bytes())>>
    : std::true_type {};

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

// One timed loop: ops finds over keys[start...], cycling. Returns the number
// of hits (which must be ops) and adds the values to sink so that no
// compiler can drop the work.
template <class R>
inline uint64_t hit_loop(R &r, const std::vector<Key> &keys, uint64_t start, uint64_t ops,
                         uint64_t *sink) {
    const uint64_t n = keys.size();
    uint64_t i = start % n, hits = 0, acc = 0;
    Value v;
    for (uint64_t j = 0; j < ops; j++) {
        if (r.find(keys[i], &v)) {
            hits++;
            acc += uint64_t(v.algo) + v.memory;
        }
        if (++i == n) i = 0;
    }
    *sink += acc;
    return hits;
}

template <class Impl>
int do_hit(const std::string &path, uint64_t n, int64_t min_ms) {
    // The lookup order and its keys exist before the first RSS reading, so
    // the delta counts the store alone.
    std::vector<uint32_t> order = shuffled(n, 0xC0FFEE);
    std::vector<Key> keys(n);
    for (uint64_t i = 0; i < n; i++) keys[i] = make_key(order[i]);
    int64_t rss0 = rss_bytes();

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
            Value want = make_value(order[i]);
            if (!r.find(keys[i], &v)) die("miss", std::to_string(order[i]));
            if (std::memcmp(&v, &want, sizeof v) != 0) die("wrong value", std::to_string(order[i]));
        }
    }
    uint64_t sink = 0;

    // 1 thread: warm up, then run chunks until min_ms has passed.
    uint64_t ops1 = 0;
    double ns1 = 0;
    {
        typename Impl::Reader r(*impl);
        // Warm up; a front map filled by finds needs every key once.
        hit_loop(r, keys, 0, Impl::kFillsOnFind ? n : std::min<uint64_t>(n, 100000), &sink);
        const uint64_t chunk = 4096;
        int64_t t0 = mono_ns(), t1 = t0;
        uint64_t at = 0;
        while (t1 - t0 < min_ms * 1000000) {
            if (hit_loop(r, keys, at, chunk, &sink) != chunk) die("miss in hit loop");
            at += chunk;
            ops1 += chunk;
            t1 = mono_ns();
        }
        ns1 = double(t1 - t0) / double(ops1);
    }

    // 2 threads: each does ops1 finds, starting at opposite ends of the
    // order; aggregate throughput over the wall time both took.
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> thread_ns(2);
    std::vector<uint64_t> sinks(2);
    std::vector<std::thread> ts;
    for (int t = 0; t < 2; t++) {
        ts.emplace_back([&, t] {
            typename Impl::Reader r(*impl);
            hit_loop(r, keys, t * n / 2, std::min<uint64_t>(n, 20000), &sinks[t]);
            ready++;
            while (!go.load(std::memory_order_acquire)) {
            }
            int64_t a = mono_ns();
            if (hit_loop(r, keys, t * n / 2, ops1, &sinks[t]) != ops1) die("miss in hit loop");
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

    int64_t rss1 = rss_bytes();
    std::string line;
    if constexpr (has_front_bytes<Impl>::value)
        line += field("front_per_entry", double(impl->front_bytes()) / double(n));
    line += field("hit1_ns", ns1) + field("mops1", 1e3 / ns1) + field("mops2", mops2) +
                       field("hit2_ns", (thread_ns[0] + thread_ns[1]) / 2) +
                       field("ops", int64_t(ops1)) +
                       field("rss_per_entry", double(rss1 - rss0) / double(n)) +
                       field("sink", int64_t((sink + sinks[0] + sinks[1]) & 0xffff));
    finish(line);
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
        Value want = make_value(0);
        if (std::memcmp(&v, &want, sizeof v) != 0) die("wrong value");

        // Then every key once, in a shuffled order (generating the keys is
        // not timed), up to 100k entries: beyond, SQLite alone would take
        // tens of seconds.
        if (n > 100000) {
            finish(field("load_ms", (t1 - t0) / 1e6) + field("inproc_ms", (t1 - tm) / 1e6));
        }
        std::vector<uint32_t> order = shuffled(n, 0xBEEF);
        std::vector<Key> keys(n);
        for (uint64_t i = 0; i < n; i++) keys[i] = make_key(order[i]);
        uint64_t sink = 0;
        int64_t t2 = mono_ns();
        if (hit_loop(r, keys, 0, n, &sink) != n) die("miss after load");
        int64_t t3 = mono_ns();
        finish(field("load_ms", (t1 - t0) / 1e6) + field("inproc_ms", (t1 - tm) / 1e6) +
               field("all_ms", ((t1 - t0) + (t3 - t2)) / 1e6) + field("sink", int64_t(sink & 0xff)));
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
