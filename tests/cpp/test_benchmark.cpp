// Tests of include/convcache_benchmark.hpp and convcache_devices.hpp against
// the real library: BenchmarkCache over the library's one index (threads,
// write-through, freshness, no second map), key policies with DeviceCaches,
// getOrCreate's single flight, and the degraded modes where its local map
// answers (forked child, read-only, strict, recache, unopenable file).
#include "convcache_benchmark.hpp"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.hpp"

using namespace testutil;
namespace cc = convcache;

using FwdCache = cc::BenchmarkCache<Params, Perf>;
using DeviceKey = cc::device_key<Params, &Params::device_id>;
using DdpCache = cc::BenchmarkCache<Params, Perf, DeviceKey>;

// The key BenchmarkCache stores in the library: name, NUL, normalised params.
static std::string library_key(const char *name, Params p) {
    std::string k(name);
    k.push_back('\0');
    k.append(reinterpret_cast<const char *>(&p), sizeof p);
    return k;
}

static uint64_t library_hits(cc::Cache &c) { return c.stats().hits; }
static uint64_t library_lookups(cc::Cache &c) {
    auto s = c.stats();
    return s.hits + s.misses;
}

static void test_find_insert_write_through() {
    std::string p = path("wt.ccdb");
    cc::Cache cache(p.c_str(), "scope-a");
    FwdCache fwd(cache, "fwd");
    Perf out{};
    Params k = make_params(7);
    CHECK(!fwd.find(k, &out)); // a miss never throws
    fwd.insert(k, make_perf(7));
    CHECK(fwd.find(k, &out) && same(out, make_perf(7)));
    fwd.insert(k, make_perf(7, 1)); // replaces
    CHECK(fwd.find(k, &out) && same(out, make_perf(7, 1)));

    // The value is in the file: a second handle (as another process would)
    // finds it under the library key.
    cc::Cache other(p.c_str(), "scope-a");
    std::string lk = library_key("fwd", k);
    size_t n = 0;
    CHECK(cc::find(other.handle(), lk.data(), lk.size(), &out, sizeof out, &n));
    CHECK(n == sizeof(Perf) && same(out, make_perf(7, 1)));

    // Caches with other names on the same handle do not see it.
    FwdCache bwd(cache, "bwd_data");
    CHECK(!bwd.find(k, &out));

    // A fresh handle and BenchmarkCache find it through the library (the file).
    cc::Cache fresh(p.c_str(), "scope-a");
    FwdCache fwd2(fresh, "fwd");
    uint64_t before = library_hits(fresh);
    CHECK(fwd2.find(k, &out) && same(out, make_perf(7, 1)));
    CHECK(library_hits(fresh) == before + 1);

    // Steady-state hits are the library's own (its C hit path): each one
    // counts there, and BenchmarkCache keeps no copy of its own.
    uint64_t lookups = library_lookups(fresh);
    before = library_hits(fresh);
    for (int i = 0; i < 1000; i++) CHECK(fwd2.find(k, &out) && same(out, make_perf(7, 1)));
    CHECK(library_lookups(fresh) == lookups + 1000);
    CHECK(library_hits(fresh) == before + 1000);
    CHECK(fwd2.size() == 0);

    // Misses do go to the library each time (it sees other processes).
    Params absent = make_params(999);
    lookups = library_lookups(fresh);
    CHECK(!fwd2.find(absent, &out));
    CHECK(!fwd2.find(absent, &out));
    CHECK(library_lookups(fresh) == lookups + 2);

    // Another process's insert becomes a hit on the next find.
    Params k2 = make_params(8);
    CHECK(!fwd2.find(k2, &out));
    std::string lk2 = library_key("fwd", k2);
    Perf v2 = make_perf(8);
    CHECK(cc::insert(other.handle(), lk2.data(), lk2.size(), &v2, sizeof v2) == CONVCACHE_OK);
    CHECK(fwd2.find(k2, &out) && same(out, v2));
}

// Many readers while a writer inserts new keys (forcing the library's table
// to grow) and replaces values: every hit must be the value of its own key,
// at some version, never garbage or another key's.
static void test_threads() {
    std::string p = path("threads.ccdb");
    cc::Cache cache(p.c_str(), "t");
    FwdCache fwd(cache, "fwd");
    const uint32_t base = 2000, extra = 3000;
    for (uint32_t i = 0; i < base; i++) fwd.insert(make_params(i), make_perf(i));

    std::atomic<bool> stop{false};
    std::atomic<uint64_t> hits{0}, bad{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < 8; t++) {
        readers.emplace_back([&, t] {
            uint64_t local = 0;
            uint32_t x = 12345u * static_cast<uint32_t>(t + 1);
            while (!stop.load(std::memory_order_relaxed)) {
                x = x * 1103515245u + 12345u;
                uint32_t i = (x >> 8) % (base + extra);
                Perf out{};
                if (fwd.find(make_params(i), &out)) {
                    local++;
                    if (out.reserved[0] != static_cast<int32_t>(i) || out.algo != static_cast<int32_t>(i % 8))
                        bad.fetch_add(1);
                } else if (i < base) {
                    bad.fetch_add(1); // inserted before the readers started: must hit
                }
            }
            hits.fetch_add(local);
        });
    }
    std::thread writer([&] {
        for (uint32_t i = base; i < base + extra; i++) fwd.insert(make_params(i), make_perf(i));
        for (uint32_t v = 1; v <= 3; v++)
            for (uint32_t i = 0; i < base; i += 7) fwd.insert(make_params(i), make_perf(i, v));
    });
    writer.join();
    stop.store(true);
    for (auto &r : readers) r.join();
    CHECK(bad.load() == 0);
    CHECK(hits.load() > 0);
    CHECK(fwd.size() == 0); // all in the library
    Perf out{};
    for (uint32_t i = 0; i < base + extra; i++) {
        CHECK(fwd.find(make_params(i), &out));
        uint32_t want_version = (i < base && i % 7 == 0) ? 3 : 0;
        CHECK(same(out, make_perf(i, want_version)));
    }
}

// DDP: rank on device 3 measures; another run on device 0 of the same GPU
// model hits; a device of another model misses.
static void test_key_policy_devices() {
    std::string p = path("ddp.ccdb");
    auto scope_of = [](int device) { return std::string(device < 4 ? "gpu=A100-80GB;cudnn=9" : "gpu=H100;cudnn=9"); };
    Perf out{};
    {
        cc::DeviceCaches caches(p.c_str(), scope_of);
        DdpCache fwd(caches, "fwd");
        fwd.insert(make_params(42, 3), make_perf(42));
        CHECK(fwd.find(make_params(42, 3), &out) && same(out, make_perf(42)));
        CHECK(caches.scope(3) == "gpu=A100-80GB;cudnn=9");
        CHECK(caches.scope(1).empty()); // not opened yet
    }
    {
        cc::DeviceCaches caches(p.c_str(), scope_of);
        DdpCache fwd(caches, "fwd");
        CHECK(fwd.find(make_params(42, 0), &out) && same(out, make_perf(42)));
        CHECK(fwd.find(make_params(42, 2), &out) && same(out, make_perf(42)));
        CHECK(!fwd.find(make_params(42, 5), &out)); // another GPU model
        // Devices of one model share one handle.
        CHECK(caches.handle(0) == caches.handle(2));
        CHECK(caches.handle(0) != caches.handle(5));
    }
    // Stored normalised (device_id 0) under the model's scope.
    cc::Cache raw(p.c_str(), "gpu=A100-80GB;cudnn=9");
    std::string lk = library_key("fwd", make_params(42, 0));
    size_t n = 0;
    CHECK(cc::find(raw.handle(), lk.data(), lk.size(), &out, sizeof out, &n) && same(out, make_perf(42)));
    std::string unnormalised = library_key("fwd", make_params(42, 3));
    CHECK(!cc::find(raw.handle(), unnormalised.data(), unnormalised.size(), &out, sizeof out, &n));

    // An identity policy keeps the device in the key.
    cc::Cache c(p.c_str(), "identity");
    FwdCache plain(c, "fwd");
    plain.insert(make_params(42, 3), make_perf(42));
    CHECK(!plain.find(make_params(42, 0), &out));

    // Out-of-range device: memory only, no throw from find/insert; handle() throws.
    std::printf("test_benchmark: (a warning for device 300 is expected)\n");
    std::fflush(stdout);
    cc::DeviceCaches caches(p.c_str(), scope_of);
    DdpCache fwd(caches, "fwd");
    Params big = make_params(43, 0);
    big.device_id = 300;
    fwd.insert(big, make_perf(43));
    CHECK(fwd.find(big, &out) && same(out, make_perf(43)));
    CHECK_THROWS(caches.handle(300), cc::invalid_error);
}

// A device whose cache cannot be opened degrades to memory only.
static void test_unopenable() {
    std::printf("test_benchmark: (a warning for device 0 is expected)\n");
    std::fflush(stdout);
    cc::DeviceCaches caches(tmpdir().c_str(), [](int) { return std::string("x"); }); // a directory
    DdpCache fwd(caches, "fwd");
    Perf out{};
    CHECK(!fwd.find(make_params(1), &out));
    fwd.insert(make_params(1), make_perf(1));
    CHECK(fwd.find(make_params(1), &out) && same(out, make_perf(1)));
    CHECK(fwd.save() == 0); // nothing opened, nothing to save
    CHECK(caches.try_handle(0) == nullptr);
    CHECK_THROWS(caches.handle(0), cc::invalid_error);
}

// In normal use the local map stays empty: a drop-in process holds one
// index, the library's. A handle in recache mode ignores the library's hits,
// so there the local map keeps what this process measured.
static void test_no_second_map() {
    std::string p = path("one.ccdb");
    cc::Cache cache(p.c_str(), "l");
    FwdCache fwd(cache, "fwd");
    Perf out{};
    for (uint32_t i = 0; i < 500; i++) fwd.insert(make_params(i), make_perf(i));
    for (uint32_t i = 0; i < 500; i++) CHECK(fwd.find(make_params(i), &out) && same(out, make_perf(i)));
    CHECK(fwd.save() == 0);
    CHECK(fwd.size() == 0);

    convcache_options o = cc::options();
    o.path = p.c_str();
    o.scope = "l";
    o.mode = CONVCACHE_MODE_RECACHE;
    cc::Cache re(o);
    FwdCache again(re, "fwd");
    CHECK(!again.find(make_params(1), &out)); // recache: measure again
    again.insert(make_params(1), make_perf(1, 2));
    CHECK(again.find(make_params(1), &out) && same(out, make_perf(1, 2)));
    CHECK(again.size() == 1);
    cc::Cache fresh(p.c_str(), "l"); // the new measurement is in the file
    FwdCache reader(fresh, "fwd");
    CHECK(reader.find(make_params(1), &out) && same(out, make_perf(1, 2)));
}

// A hit is as fresh as the library's: another handle's replacement is seen
// after load() (or the library's next look at the file), with no extra step.
static void test_fresh_after_load() {
    std::string p = path("stale.ccdb");
    cc::Cache mine(p.c_str(), "s");
    cc::Cache theirs(p.c_str(), "s");
    FwdCache fwd(mine, "fwd");
    Params k = make_params(9);
    fwd.insert(k, make_perf(9, 0));
    std::string lk = library_key("fwd", k);
    Perf v1 = make_perf(9, 1);
    CHECK(cc::insert(theirs.handle(), lk.data(), lk.size(), &v1, sizeof v1) == CONVCACHE_OK);
    Perf out{};
    CHECK(fwd.load() == 0);
    CHECK(fwd.find(k, &out) && same(out, v1));
}

static void test_get_or_create_single_flight() {
    std::string p = path("goc.ccdb");
    cc::Cache cache(p.c_str(), "g");
    FwdCache fwd(cache, "exec");
    Params k = make_params(77);
    std::atomic<int> builds{0}, built_here{0}, wrong{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> ts;
    for (int t = 0; t < 16; t++) {
        ts.emplace_back([&] {
            while (!go.load()) std::this_thread::yield();
            auto r = fwd.getOrCreate(k, [&](const Params &q) {
                builds.fetch_add(1);
                std::this_thread::sleep_for(std::chrono::milliseconds(200)); // a slow benchmark
                return make_perf(static_cast<uint32_t>(q.groups));
            });
            if (!r.second) built_here.fetch_add(1);
            if (!same(r.first, make_perf(77))) wrong.fetch_add(1);
        });
    }
    go.store(true);
    for (auto &t : ts) t.join();
    CHECK(builds.load() == 1);
    CHECK(built_here.load() == 1);
    CHECK(wrong.load() == 0);
    Perf out{};
    CHECK(fwd.find(k, &out) && same(out, make_perf(77)));

    // Stored in the file: another handle's getOrCreate hits without building.
    cc::Cache other(p.c_str(), "g");
    FwdCache fwd2(other, "exec");
    auto r = fwd2.getOrCreate(k, [&](const Params &) -> Perf {
        builds.fetch_add(1);
        return Perf{};
    });
    CHECK(r.second && same(r.first, make_perf(77)) && builds.load() == 1);

    // A builder's exception reaches the caller; nothing is stored.
    Params k2 = make_params(78);
    struct Boom : std::runtime_error { Boom() : std::runtime_error("boom") {} };
    CHECK_THROWS(fwd.getOrCreate(k2, [](const Params &) -> Perf { throw Boom(); }), Boom);
    CHECK(!fwd.find(k2, &out));
    auto r2 = fwd.getOrCreate(k2, [](const Params &) { return make_perf(78); });
    CHECK(!r2.second && same(r2.first, make_perf(78)));
}

static void test_value_size_mismatch() {
    std::string p = path("size.ccdb");
    cc::Cache cache(p.c_str(), "z");
    Params k = make_params(3);
    std::string lk = library_key("fwd", k);
    const char small[10] = "123456789";
    CHECK(cc::insert(cache.handle(), lk.data(), lk.size(), small, sizeof small) == CONVCACHE_OK);
    std::string big(200, 'x');
    Params k2 = make_params(4);
    std::string lk2 = library_key("fwd", k2);
    CHECK(cc::insert(cache.handle(), lk2.data(), lk2.size(), big.data(), big.size()) == CONVCACHE_OK);
    FwdCache fwd(cache, "fwd");
    Perf out{};
    CHECK(!fwd.find(k, &out));  // shorter value: a miss
    CHECK(!fwd.find(k2, &out)); // longer value (E_RANGE): a miss
    auto r = fwd.getOrCreate(k2, [](const Params &) { return make_perf(4); });
    CHECK(!r.second && same(r.first, make_perf(4)));
    fwd.insert(k, make_perf(3));
    cc::Cache fresh(p.c_str(), "z");
    FwdCache fwd2(fresh, "fwd");
    CHECK(fwd2.find(k, &out) && same(out, make_perf(3)));
    CHECK(fwd2.find(k2, &out) && same(out, make_perf(4)));
}

static void test_modes() {
    std::string p = path("modes.ccdb");
    {
        cc::Cache c(p.c_str(), "m");
        FwdCache f(c, "fwd");
        f.insert(make_params(1), make_perf(1));
    }
    // Read-only: insert keeps the value in memory, no exception.
    convcache_options o = cc::options();
    o.path = p.c_str();
    o.scope = "m";
    o.mode = CONVCACHE_MODE_RO;
    {
        cc::Cache ro(o);
        FwdCache f(ro, "fwd");
        Perf out{};
        CHECK(f.find(make_params(1), &out) && same(out, make_perf(1)));
        f.insert(make_params(2), make_perf(2));
        CHECK(f.find(make_params(2), &out) && same(out, make_perf(2)));
        CHECK(f.save() == CONVCACHE_E_READONLY || f.save() == 0);
        CHECK(ro.insert(make_params(3), make_perf(3)) == CONVCACHE_E_READONLY);
    }
    // Strict: a miss is an error.
    o.mode = CONVCACHE_MODE_STRICT;
    {
        cc::Cache strict(o);
        FwdCache f(strict, "fwd");
        Perf out{};
        CHECK(f.find(make_params(1), &out));
        CHECK_THROWS(f.find(make_params(99), &out), cc::miss_error);
    }
    // Off: the library keeps entries in memory, like PyTorch's own map.
    o.mode = CONVCACHE_MODE_OFF;
    {
        cc::Cache off(o);
        FwdCache f(off, "fwd");
        Perf out{};
        CHECK(!f.find(make_params(1), &out));
        f.insert(make_params(5), make_perf(5));
        CHECK(f.find(make_params(5), &out) && same(out, make_perf(5)));
    }
    // Bad names are refused at construction.
    cc::Cache c(p.c_str(), "m");
    CHECK_THROWS(FwdCache(c, std::string(65, 'n')), cc::invalid_error);
    CHECK_THROWS(FwdCache(c, std::string("a\0b", 3)), cc::invalid_error);
}

// In a child forked after the library started, the library refuses every
// call; BenchmarkCache keeps working from memory and never throws.
static void test_forked_child() {
    std::string p = path("fork.ccdb");
    cc::Cache cache(p.c_str(), "f");
    FwdCache fwd(cache, "fwd");
    fwd.insert(make_params(1), make_perf(1));
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int rc = 0;
        try {
            Perf out{};
            if (!fwd.find(make_params(1), &out) || !same(out, make_perf(1))) rc = 2;
            if (fwd.find(make_params(2), &out)) rc = 3;
            fwd.insert(make_params(2), make_perf(2));
            if (!fwd.find(make_params(2), &out) || !same(out, make_perf(2))) rc = 4;
            auto r = fwd.getOrCreate(make_params(3), [](const Params &) { return make_perf(3); });
            if (r.second || !same(r.first, make_perf(3))) rc = 5;
            if (fwd.save() != CONVCACHE_E_FORKED) rc = 6;
            if (fwd.load() != CONVCACHE_E_FORKED) rc = 7;
        } catch (const std::exception &e) {
            std::fprintf(stderr, "child threw: %s\n", e.what());
            rc = 8;
        }
        _exit(rc);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) std::fprintf(stderr, "child status %d\n", st);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    // The child's insert did not reach the parent.
    Perf out{};
    CHECK(!fwd.find(make_params(2), &out));
}

// The Cache closed under threads that still find, insert and build (a host
// whose static destructors run while its workers do): nothing throws, every
// value found is right, and from then on the local map answers (the
// library says CONVCACHE_E_HANDLE). Before, insert, find and getOrCreate
// threw handle_error.
static void test_closed_under_it() {
    std::string p = path("closed.ccdb");
    cc::Cache cache(p.c_str(), "c");
    FwdCache fwd(cache, "fwd");
    const uint32_t keys = 500;
    for (uint32_t i = 0; i < keys; i++) fwd.insert(make_params(i), make_perf(i));
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> bad{0}, thrown{0}, calls{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; t++) {
        workers.emplace_back([&, t] {
            uint32_t x = 777u * static_cast<uint32_t>(t + 1);
            while (!stop.load(std::memory_order_relaxed) || calls.load() < 20000) {
                x = x * 1103515245u + 12345u;
                uint32_t i = (x >> 8) % (2 * keys);
                try {
                    Perf out{};
                    if (x % 3 == 0) {
                        fwd.insert(make_params(i), make_perf(i));
                    } else if (x % 3 == 1) {
                        out = fwd.getOrCreate(make_params(i), [&](const Params &) { return make_perf(i); }).first;
                        if (!same(out, make_perf(i))) bad.fetch_add(1);
                    } else if (fwd.find(make_params(i), &out) && !same(out, make_perf(i))) {
                        bad.fetch_add(1);
                    }
                } catch (const std::exception &e) {
                    std::fprintf(stderr, "test_closed_under_it: %s\n", e.what());
                    thrown.fetch_add(1);
                }
                calls.fetch_add(1);
            }
        });
    }
    while (calls.load() < 2000) std::this_thread::yield();
    convcache_close(cache.handle()); // as convcache_close from another layer: the token stays in fwd
    stop.store(true);
    for (auto &w : workers) w.join();
    CHECK(thrown.load() == 0);
    CHECK(bad.load() == 0);
    // The local map answers now, and load and save say why.
    fwd.insert(make_params(3 * keys), make_perf(3 * keys));
    Perf out{};
    CHECK(fwd.find(make_params(3 * keys), &out) && same(out, make_perf(3 * keys)));
    CHECK(fwd.load() == CONVCACHE_E_HANDLE);
    CHECK(fwd.save() == CONVCACHE_E_HANDLE);
}

int main() {
    struct {
        const char *name;
        void (*fn)();
    } tests[] = {
        {"find_insert_write_through", test_find_insert_write_through},
        {"threads", test_threads},
        {"key_policy_devices", test_key_policy_devices},
        {"unopenable", test_unopenable},
        {"no_second_map", test_no_second_map},
        {"fresh_after_load", test_fresh_after_load},
        {"get_or_create_single_flight", test_get_or_create_single_flight},
        {"value_size_mismatch", test_value_size_mismatch},
        {"modes", test_modes},
        {"forked_child", test_forked_child},
        {"closed_under_it", test_closed_under_it},
    };
    for (auto &t : tests) {
        std::printf("test_benchmark: %s\n", t.name);
        std::fflush(stdout);
        t.fn();
    }
    std::printf("test_benchmark: all passed\n");
    return 0;
}
