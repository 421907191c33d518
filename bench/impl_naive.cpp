// bench_naive - baseline (d): the seed's save-at-exit file
// (shared/seeds/000_*.txt). PyTorch's map in memory; load() reads the whole
// file with an ifstream at start, save() writes the whole map with an
// ofstream (truncating the file) at exit. No lock, no merge: the last writer
// wins.
//
// Tuned, not a strawman: binary records (key bytes, value bytes) back to
// back, one read of the whole file, one write of one buffer, and a reserved
// map. A short or torn file loads every complete record it holds.
#include <fstream>
#include <iterator>

#include "torch_map.hpp"
#include "workloads.hpp"

namespace {

struct Naive {
    static constexpr const char *kName = "naive file";
    static constexpr bool kPersistent = true;
    static constexpr bool kWarmEveryKey = false;
    static void ready() {}

    std::string path;
    bench::BenchmarkCache<bench::Value> cache;

    explicit Naive(const std::string &p) : path(p) {}

    int load() {
        std::lock_guard<std::mutex> guard(cache.mutex);
        std::ifstream in(path, std::ios::in | std::ios::binary);
        if (!in) return 0;  // no file yet: an empty cache
        in.seekg(0, std::ios::end);
        std::streamoff size = in.tellg();
        in.seekg(0, std::ios::beg);
        if (size <= 0) return 0;
        std::vector<char> buf(static_cast<size_t>(size));
        in.read(buf.data(), size);
        size_t got = size_t(in.gcount());
        const size_t rec = sizeof(bench::Key) + sizeof(bench::Value);
        cache.map.reserve(cache.map.size() + got / rec);
        for (size_t off = 0; off + rec <= got; off += rec) {
            bench::Key k;
            bench::Value v;
            std::memcpy(&k, buf.data() + off, sizeof k);
            std::memcpy(&v, buf.data() + off + sizeof k, sizeof v);
            cache.map[k] = v;
        }
        return 0;
    }

    int save() {
        std::lock_guard<std::mutex> guard(cache.mutex);
        const size_t rec = sizeof(bench::Key) + sizeof(bench::Value);
        std::vector<char> buf(cache.map.size() * rec);
        size_t off = 0;
        for (const auto &e : cache.map) {
            std::memcpy(buf.data() + off, &e.first, sizeof e.first);
            std::memcpy(buf.data() + off + sizeof e.first, &e.second, sizeof e.second);
            off += rec;
        }
        std::ofstream out(path, std::ios::out | std::ios::binary | std::ios::trunc);
        out.write(buf.data(), std::streamsize(buf.size()));
        out.close();
        return out ? 0 : -1;
    }

    bool find(const bench::Key &k, bench::Value *v) { return cache.find(k, v); }
    int insert(const bench::Key &k, const bench::Value &v) {
        cache.insert(k, v);
        return 0;
    }
    void begin_bulk() {}
    void end_bulk() {}
    void begin_writer() { load(); }
    static void after_prep(const std::string &) {}
    void finish_prep(uint64_t) {}

    struct Reader {
        Naive &m;
        explicit Reader(Naive &m_) : m(m_) {}
        bool find(const bench::Key &k, bench::Value *v) { return m.cache.find(k, v); }
    };
};

}  // namespace

int main(int argc, char **argv) { return bench::run<Naive>(argc, argv); }
