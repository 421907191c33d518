// bench_sqlite - baseline (e): SQLite, as MIOpen keeps its perf-db.
//
//   scopes(id INTEGER PRIMARY KEY, name TEXT UNIQUE)
//   perf(scope INTEGER, key BLOB, value BLOB, PRIMARY KEY(scope, key)) WITHOUT ROWID
//
// Tuned: WAL journal with synchronous=NORMAL (a commit survives a killed
// process, as a convcache insert does; fsync at checkpoints), a busy handler
// (10 s, short sleeps) so concurrent writers queue instead of failing,
// prepared statements reused
// for every call, a clustered (WITHOUT ROWID) primary key so a lookup is one
// B-tree descent, the scope as a small integer rather than a string in every
// row, memory-mapped reads, and one connection per reading thread. Each
// insert is its own transaction (durable per call, like convcache_insert);
// the prep fill alone runs in one transaction, and is followed by VACUUM.
#include <sqlite3.h>

#include "workloads.hpp"

namespace {

const char *kScope = "bench-scope";

// A busy handler that retries after a short sleep, growing from 20 us to at
// most 1 ms, for up to 10 s. SQLite's own busy_timeout handler sleeps 1, 2,
// 5, 10, ... up to 100 ms between tries, which leaves the lock idle most of
// the time when many short transactions queue for it.
int busy_retry(void *, int tries) {
    static const int64_t kLimitNs = 10 * int64_t(1000000000);
    long us = 20L << (tries < 6 ? tries : 6);
    if (us > 1000) us = 1000;
    thread_local int64_t since = 0;
    int64_t now = bench::mono_ns();
    if (tries == 0) since = now;
    if (now - since > kLimitNs) return 0;  // give up: SQLITE_BUSY
    usleep(useconds_t(us));
    return 1;
}

sqlite3 *open_db(const std::string &path) {
    sqlite3 *db = nullptr;
    int rc = sqlite3_open_v2(path.c_str(), &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             nullptr);
    if (rc != SQLITE_OK) bench::die("sqlite3_open_v2", sqlite3_errstr(rc));
    sqlite3_busy_handler(db, busy_retry, nullptr);
    return db;
}

void exec(sqlite3 *db, const char *sql) {
    char *err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : "?";
        sqlite3_free(err);
        bench::die("sqlite3_exec", std::string(sql) + ": " + msg);
    }
}

sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = nullptr;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr) != SQLITE_OK)
        bench::die("sqlite3_prepare", std::string(sql) + ": " + sqlite3_errmsg(db));
    return st;
}

// Per-connection settings, for readers and writers alike.
void tune(sqlite3 *db) {
    exec(db, "PRAGMA synchronous=NORMAL");
    exec(db, "PRAGMA mmap_size=1073741824");
    exec(db, "PRAGMA cache_size=-65536");
    exec(db, "PRAGMA temp_store=MEMORY");
}

// A lookup connection: its own handle and prepared SELECT.
struct Lookup {
    sqlite3 *db;
    sqlite3_stmt *sel;
    int64_t scope;

    Lookup(const std::string &path, int64_t s) : db(open_db(path)), scope(s) {
        tune(db);
        sel = prepare(db, "SELECT value FROM perf WHERE scope=?1 AND key=?2");
    }
    ~Lookup() {
        sqlite3_finalize(sel);
        sqlite3_close(db);
    }
    bool find(const bench::Key &k, bench::Value *v) {
        sqlite3_bind_int64(sel, 1, scope);
        sqlite3_bind_blob(sel, 2, &k, sizeof k, SQLITE_STATIC);
        bool hit = false;
        if (sqlite3_step(sel) == SQLITE_ROW &&
            sqlite3_column_bytes(sel, 0) == int(sizeof *v)) {
            std::memcpy(v, sqlite3_column_blob(sel, 0), sizeof *v);
            hit = true;
        }
        sqlite3_reset(sel);
        return hit;
    }
};

struct Sqlite {
    static constexpr const char *kName = "SQLite WAL";
    static constexpr bool kPersistent = true;
    static constexpr bool kWarmEveryKey = false;
    static void ready() {}

    std::string path;
    sqlite3 *db;
    sqlite3_stmt *ins;
    int64_t scope = 0;
    std::unique_ptr<Lookup> lookup;

    explicit Sqlite(const std::string &p) : path(p), db(open_db(p)) {
        exec(db, "PRAGMA journal_mode=WAL");
        tune(db);
        exec(db,
             "CREATE TABLE IF NOT EXISTS scopes(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);"
             "CREATE TABLE IF NOT EXISTS perf(scope INTEGER NOT NULL, key BLOB NOT NULL,"
             " value BLOB NOT NULL, PRIMARY KEY(scope, key)) WITHOUT ROWID");
        sqlite3_stmt *st = prepare(db, "INSERT OR IGNORE INTO scopes(name) VALUES(?1)");
        sqlite3_bind_text(st, 1, kScope, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) bench::die("insert scope", sqlite3_errmsg(db));
        sqlite3_finalize(st);
        st = prepare(db, "SELECT id FROM scopes WHERE name=?1");
        sqlite3_bind_text(st, 1, kScope, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_ROW) bench::die("select scope", sqlite3_errmsg(db));
        scope = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        ins = prepare(db, "INSERT OR REPLACE INTO perf(scope, key, value) VALUES(?1, ?2, ?3)");
    }
    ~Sqlite() {
        lookup.reset();
        sqlite3_finalize(ins);
        sqlite3_close(db);
    }

    // Nothing to read ahead: SQLite answers from the file on demand.
    int load() { return 0; }

    bool find(const bench::Key &k, bench::Value *v) {
        if (!lookup) lookup.reset(new Lookup(path, scope));
        return lookup->find(k, v);
    }

    int insert(const bench::Key &k, const bench::Value &v) {
        sqlite3_bind_int64(ins, 1, scope);
        sqlite3_bind_blob(ins, 2, &k, sizeof k, SQLITE_STATIC);
        sqlite3_bind_blob(ins, 3, &v, sizeof v, SQLITE_STATIC);
        int rc = sqlite3_step(ins);
        sqlite3_reset(ins);
        return rc == SQLITE_DONE ? 0 : -1;
    }

    int save() { return 0; }  // every insert committed itself
    void begin_bulk() { exec(db, "BEGIN IMMEDIATE"); }
    void end_bulk() { exec(db, "COMMIT"); }
    void begin_writer() {}
    static void after_prep(const std::string &) {}
    void finish_prep(uint64_t) {
        exec(db, "VACUUM");
        exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    }

    struct Reader {
        Lookup l;
        explicit Reader(Sqlite &s) : l(s.path, s.scope) {}
        bool find(const bench::Key &k, bench::Value *v) { return l.find(k, v); }
    };
};

}  // namespace

int main(int argc, char **argv) { return bench::run<Sqlite>(argc, argv); }
