// Tests of include/convcache.hpp's two layers against the real library:
// the exception classes each code maps to, open errors, Cache RAII and
// moves, the cudnn_scope wrapper. The drop-in built on them is tested in
// test_benchmark.cpp.
#include "convcache.hpp"

#include <string>

#include "check.hpp"

using namespace testutil;
namespace cc = convcache;

static void test_error_mapping() {
    struct Row {
        int code;
        bool (*is)(const cc::error &);
    };
    const Row rows[] = {
        {CONVCACHE_E_INVALID, [](const cc::error &e) { return dynamic_cast<const cc::invalid_error *>(&e) != nullptr; }},
        {CONVCACHE_E_HANDLE, [](const cc::error &e) { return dynamic_cast<const cc::handle_error *>(&e) != nullptr; }},
        {CONVCACHE_E_SIZE, [](const cc::error &e) { return dynamic_cast<const cc::size_error *>(&e) != nullptr; }},
        {CONVCACHE_E_RANGE, [](const cc::error &e) { return dynamic_cast<const cc::range_error *>(&e) != nullptr; }},
        {CONVCACHE_E_IO, [](const cc::error &e) { return dynamic_cast<const cc::io_error *>(&e) != nullptr; }},
        {CONVCACHE_E_ACCESS, [](const cc::error &e) { return dynamic_cast<const cc::access_error *>(&e) != nullptr; }},
        {CONVCACHE_E_NOSPC, [](const cc::error &e) { return dynamic_cast<const cc::no_space_error *>(&e) != nullptr; }},
        {CONVCACHE_E_FORMAT, [](const cc::error &e) { return dynamic_cast<const cc::format_error *>(&e) != nullptr; }},
        {CONVCACHE_E_CORRUPT, [](const cc::error &e) { return dynamic_cast<const cc::corrupt_error *>(&e) != nullptr; }},
        {CONVCACHE_E_LOCK, [](const cc::error &e) { return dynamic_cast<const cc::lock_error *>(&e) != nullptr; }},
        {CONVCACHE_E_READONLY, [](const cc::error &e) { return dynamic_cast<const cc::read_only_error *>(&e) != nullptr; }},
        {CONVCACHE_E_FORKED, [](const cc::error &e) { return dynamic_cast<const cc::forked_error *>(&e) != nullptr; }},
        {CONVCACHE_E_MISS, [](const cc::error &e) { return dynamic_cast<const cc::miss_error *>(&e) != nullptr; }},
        {CONVCACHE_E_UNAVAILABLE, [](const cc::error &e) { return dynamic_cast<const cc::unavailable_error *>(&e) != nullptr; }},
        {CONVCACHE_E_BUILDER, [](const cc::error &e) { return dynamic_cast<const cc::builder_error *>(&e) != nullptr; }},
        {CONVCACHE_E_USER - 7, [](const cc::error &e) { return dynamic_cast<const cc::builder_error *>(&e) != nullptr; }},
        {CONVCACHE_E_INTERNAL, [](const cc::error &e) { return dynamic_cast<const cc::internal_error *>(&e) != nullptr; }},
    };
    for (const Row &r : rows) {
        bool caught = false;
        try {
            cc::error::raise("test", r.code);
        } catch (const cc::error &e) {
            caught = true;
            CHECK(e.code() == r.code);
            CHECK(r.is(e));
            CHECK(std::string(e.what()).find("test: ") == 0);
        }
        CHECK(caught);
    }
    // The groups.
    CHECK_THROWS(cc::error::raise("t", CONVCACHE_E_LOCK), cc::file_error);
    CHECK_THROWS(cc::error::raise("t", CONVCACHE_E_SIZE), cc::usage_error);
    CHECK_THROWS(cc::error::raise("t", CONVCACHE_E_IO), std::runtime_error);

    // Each row of convcache.h's CONVCACHE_ERROR_LIST: its class, in its
    // group, with the code's message in what().
#define CHECK_ROW(name, message, cxx_class, cxx_group)                              \
    {                                                                             \
        bool caught = false;                                                      \
        try {                                                                     \
            cc::error::raise("t", CONVCACHE_E_##name);                            \
        } catch (const cc::cxx_class &e) {                                        \
            caught = dynamic_cast<const cc::cxx_group *>(&e) != nullptr &&        \
                     std::string(e.what()).find(message) != std::string::npos;    \
        } catch (const cc::error &) { /* another class: caught stays false */     \
        }                                                                         \
        CHECK(caught);                                                            \
    }
    CONVCACHE_ERROR_LIST(CHECK_ROW)
#undef CHECK_ROW
}

static void test_open_errors() {
    // A directory is not a cache file.
    CHECK_THROWS(cc::Cache(tmpdir().c_str()), cc::invalid_error);
    try {
        cc::Cache c(tmpdir().c_str());
    } catch (const cc::error &e) {
        CHECK(e.code() == CONVCACHE_E_INVALID);
        CHECK(std::string(e.what()).find("convcache_open") != std::string::npos);
    }
    // A foreign file is refused and left alone.
    std::string foreign = path("foreign.ccdb");
    FILE *f = std::fopen(foreign.c_str(), "w");
    CHECK(f);
    std::fputs("this is not a convcache file, it is somebody's notes\n", f);
    std::fclose(f);
    CHECK_THROWS(cc::Cache(foreign.c_str()), cc::format_error);
    CHECK_THROWS(cc::Cache(foreign.c_str()), cc::file_error);
}

static void test_cache_raii_and_move() {
    std::string p = path("raii.ccdb");
    cc::Cache a(p.c_str(), "s");
    CHECK(a);
    convcache_handle *h = a.handle();
    CHECK(h != nullptr);

    cc::Cache b(std::move(a));
    CHECK(!a && a.handle() == nullptr);
    CHECK(b.handle() == h);

    Params k = make_params(1);
    Perf v = make_perf(1), out{};
    CHECK(b.insert(k, v) == CONVCACHE_OK);
    CHECK(b.find(k, &out) && same(out, v));

    // A moved-from Cache is empty: operations throw, destruction is fine.
    CHECK_THROWS(a.find(k, &out), cc::invalid_error);
    CHECK_THROWS(a.insert(k, v), cc::invalid_error);

    // Move assignment closes the target's handle first.
    cc::Cache c(p.c_str(), "other");
    c = std::move(b);
    CHECK(c.handle() == h && !b);
    c = std::move(c); // self-move keeps the handle
    CHECK(c.handle() == h);

    // release / adopt hand the handle over without closing it.
    convcache_handle *raw = c.release();
    CHECK(!c && raw == h);
    size_t n = 0;
    CHECK(convcache_find(raw, &k, sizeof k, &out, sizeof out, &n) == CONVCACHE_HIT && n == sizeof out);
    cc::Cache d = cc::Cache::adopt(raw);
    CHECK(d.find(k, &out) && same(out, v));
    d.close();
    CHECK(!d);
    d.close(); // twice is fine

    // A typed find with a value of another size is a miss, not an error.
    struct Small { int32_t x; } s{};
    CHECK(cc::Cache(p.c_str(), "s").find(k, &s) == false);
}

static void test_cudnn_scope_wrapper() {
    // No GPU here is the common case; either answer is fine, but it must
    // not crash, and failure is unavailable_error.
    try {
        std::string s = cc::cudnn_scope(0);
        CHECK(!s.empty());
    } catch (const cc::error &e) {
        CHECK(e.code() == CONVCACHE_E_UNAVAILABLE || e.code() == CONVCACHE_E_INVALID);
    }
    CHECK(!cc::cudnn_scope_or_default(0).empty());
}

int main() {
    struct {
        const char *name;
        void (*fn)();
    } tests[] = {
        {"error_mapping", test_error_mapping},
        {"open_errors", test_open_errors},
        {"cache_raii_and_move", test_cache_raii_and_move},
        {"cudnn_scope_wrapper", test_cudnn_scope_wrapper},
    };
    for (auto &t : tests) {
        std::printf("test_hpp: %s\n", t.name);
        std::fflush(stdout);
        t.fn();
    }
    std::printf("test_hpp: all passed\n");
    return 0;
}
