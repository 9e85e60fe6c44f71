// The tuning database on SQLite: a `meta` table holding the schema version and a `points` table
// with one row per (key, knobs), written through prepared statements in WAL mode.
#include "tune/database.hpp"

#include <sqlite3.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

namespace emmy::tune {
namespace {

namespace fs = std::filesystem;

// How long a statement waits for another process's lock before it fails with "database is locked".
constexpr int kBusyTimeoutMs = 30000;

// The key columns, in the order bind_key binds them (?1 to ?7).
constexpr const char* kKeyColumns = "op_hash, op, file, target, device, shape_class, dtype";
constexpr const char* kKeyMatch =
    "op_hash = ?1 AND op = ?2 AND file = ?3 AND target = ?4 AND device = ?5 AND shape_class = ?6 AND dtype = ?7";
// The `ok` column holds a status: failed, ok, or cut off after one launch (the first two are
// the 0 and 1 it held before cut-offs were stored).
constexpr int kFailed = 0, kOk = 1, kCutOff = 2;
// The point columns, in the order read_point reads them.
constexpr const char* kPointColumns = "knobs, ok, time_us, registers, smem_bytes, occupancy, error, measured_at";
// Ok points by time (a missing time last), then failed points; knobs break ties.
constexpr const char* kPointOrder =
    "ok = 1 DESC, CASE WHEN ok = 1 THEN time_us IS NULL END, CASE WHEN ok = 1 THEN time_us END, knobs";

[[noreturn]] void fail(sqlite3* db, const std::string& path, std::string_view what, std::string_view call) {
  throw DatabaseError(fmt::format("tuning database {}: {} failed ({}): {}", path, what, call,
                                  db ? sqlite3_errmsg(db) : "out of memory"));
}

void exec(sqlite3* db, const std::string& path, const char* sql, std::string_view what) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(db, path, what, sql);
}

// One prepared statement; `what` names the step in error messages.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const std::string& sql, std::string_view what)
      : db_(db), path_(path), what_(what) {
    if (sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size() + 1), &stmt_, nullptr) != SQLITE_OK)
      fail(db_, path_, what_, "sqlite3_prepare_v2");
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  void text(int index, std::string_view value) {
    // A default string_view has no data: bind "", not NULL.
    check(sqlite3_bind_text64(stmt_, index, value.data() ? value.data() : "", value.size(), SQLITE_TRANSIENT,
                              SQLITE_UTF8));
  }
  void integer(int index, int64_t value) { check(sqlite3_bind_int64(stmt_, index, value)); }
  void real(int index, std::optional<double> value) {
    check(value ? sqlite3_bind_double(stmt_, index, *value) : sqlite3_bind_null(stmt_, index));
  }

  // True when a row is ready, false when the statement is done.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, path_, what_, "sqlite3_step");
  }
  void run() {
    while (step()) {
    }
  }
  // Ready to run again with new bindings.
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  std::string column_text(int i) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, i));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, i))) : std::string();
  }
  int64_t column_integer(int i) const { return sqlite3_column_int64(stmt_, i); }
  std::optional<double> column_real(int i) const {
    if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(stmt_, i);
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, path_, what_, "sqlite3_bind");
  }

  sqlite3* db_;
  const std::string& path_;
  std::string_view what_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN, then COMMIT on commit() or ROLLBACK when left early (an exception).
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& path, bool write) : db_(db), path_(path) {
    exec(db_, path_, write ? "BEGIN IMMEDIATE" : "BEGIN", "beginning a transaction");
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() {
    if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec(db_, path_, "COMMIT", "committing a transaction");
    open_ = false;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool open_ = true;
};

void bind_key(Statement& s, const TuneKey& key) {
  s.text(1, key.op_hash);
  s.text(2, key.op);
  s.text(3, key.file);
  s.text(4, key.target);
  s.text(5, key.device);
  s.text(6, key.shape_class);
  s.text(7, key.dtype);
}

Point read_point(const Statement& s, int first) {
  Point p;
  p.knobs = s.column_text(first);
  p.ok = s.column_integer(first + 1) == kOk;
  p.cut_off = s.column_integer(first + 1) == kCutOff;
  p.time_us = s.column_real(first + 2);
  p.registers = static_cast<int>(s.column_integer(first + 3));
  p.smem_bytes = s.column_integer(first + 4);
  p.occupancy = s.column_real(first + 5).value_or(0.0);
  p.error = s.column_text(first + 6);
  p.measured_at = s.column_text(first + 7);
  return p;
}

// The current UTC time as "YYYY-MM-DD HH:MM:SS".
std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  return std::string(text, std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm));
}

std::string insert_sql() {
  return fmt::format(
      "INSERT INTO points ({}, {}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) "
      "ON CONFLICT ({}, knobs) DO UPDATE SET ok = excluded.ok, time_us = excluded.time_us, "
      "registers = excluded.registers, smem_bytes = excluded.smem_bytes, occupancy = excluded.occupancy, "
      "error = excluded.error, measured_at = excluded.measured_at",
      kKeyColumns, kPointColumns, kKeyColumns);
}

void insert_point(Statement& s, const TuneKey& key, const Point& p, const std::string& now) {
  s.reset();
  bind_key(s, key);
  s.text(8, p.knobs);
  s.integer(9, p.ok ? kOk : p.cut_off ? kCutOff : kFailed);
  s.real(10, p.time_us);
  s.integer(11, p.registers);
  s.integer(12, p.smem_bytes);
  s.real(13, p.occupancy);
  s.text(14, p.error);
  s.text(15, p.measured_at.empty() ? now : p.measured_at);
  s.run();
}

// Creates the schema in a fresh file and checks the version of an existing one.
void prepare_schema(sqlite3* db, const std::string& path) {
  Transaction tx(db, path, true);
  exec(db, path, "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
       "creating the meta table");
  Statement version(db, path, "SELECT value FROM meta WHERE name = ?1", "reading the schema version");
  version.text(1, "schema_version");
  if (version.step()) {
    std::string found = version.column_text(0);
    if (found != std::to_string(kSchemaVersion))
      throw DatabaseError(fmt::format(
          "tuning database {} has schema version {}, and this Emmy reads version {}: delete {} to start a new one "
          "(its measurements are lost), or set $EMMY_TUNE_DB to another file",
          path, found, kSchemaVersion, path));
    return;  // nothing was written: the rollback ends the transaction
  }
  Statement others(
      db, path, "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'meta' AND name NOT LIKE 'sqlite_%'",
      "listing the tables");
  if (others.step())
    throw DatabaseError(
        fmt::format("{} is not an Emmy tuning database: it has a table '{}' but no schema version; delete it or set "
                    "$EMMY_TUNE_DB to another file",
                    path, others.column_text(0)));
  exec(db, path,
       "CREATE TABLE points ("
       "op_hash TEXT NOT NULL, op TEXT NOT NULL, file TEXT NOT NULL, target TEXT NOT NULL, device TEXT NOT NULL, "
       "shape_class TEXT NOT NULL, dtype TEXT NOT NULL, knobs TEXT NOT NULL, "
       "ok INTEGER NOT NULL, time_us REAL, registers INTEGER NOT NULL, smem_bytes INTEGER NOT NULL, "
       "occupancy REAL NOT NULL, error TEXT NOT NULL, measured_at TEXT NOT NULL, "
       "UNIQUE (op_hash, op, file, target, device, shape_class, dtype, knobs))",
       "creating the points table");
  exec(db, path, "CREATE INDEX points_by_key ON points (op_hash, op, file, target, device, shape_class, dtype)",
       "creating the key index");
  Statement insert(db, path, "INSERT INTO meta (name, value) VALUES (?1, ?2)", "writing the schema version");
  insert.text(1, "schema_version");
  insert.text(2, std::to_string(kSchemaVersion));
  insert.run();
  tx.commit();
}

}  // namespace

void Database::Close::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

Database Database::open(const std::string& path) {
  if (path.empty()) throw DatabaseError("no tuning database path ($EMMY_TUNE_DB, $XDG_CACHE_HOME and $HOME are unset)");
  if (fs::path parent = fs::path(path).parent_path(); !parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec)
      throw DatabaseError(
          fmt::format("tuning database {}: cannot create the directory {}: {}", path, parent.string(), ec.message()));
  }
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  Database db(path, raw);  // owns the handle even when the open failed
  if (rc != SQLITE_OK) fail(raw, path, "opening the file", "sqlite3_open_v2");
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  exec(raw, path, "PRAGMA journal_mode=WAL", "switching to WAL");
  exec(raw, path, "PRAGMA synchronous=NORMAL", "setting synchronous");
  prepare_schema(raw, path);
  return db;
}

std::string Database::default_path() {
  if (const char* file = std::getenv("EMMY_TUNE_DB"); file && *file) return file;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "emmy" / "tune.sqlite").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "emmy" / "tune.sqlite").string();
  return "";
}

void Database::record(const TuneKey& key, const Point& p) {
  Statement s(handle(), path_, insert_sql(), "recording a point");
  insert_point(s, key, p, utc_now());
}

void Database::record_all(const TuneKey& key, const std::vector<Point>& ps) {
  Transaction tx(handle(), path_, true);
  Statement s(handle(), path_, insert_sql(), "recording points");
  const std::string now = utc_now();
  for (const Point& p : ps) insert_point(s, key, p, now);
  tx.commit();
}

std::vector<Point> Database::points(const TuneKey& key) const {
  Statement s(handle(), path_,
              fmt::format("SELECT {} FROM points WHERE {} ORDER BY {}", kPointColumns, kKeyMatch, kPointOrder),
              "reading points");
  bind_key(s, key);
  std::vector<Point> out;
  while (s.step()) out.push_back(read_point(s, 0));
  return out;
}

std::optional<Point> Database::lookup(const TuneKey& key, std::string_view knobs) const {
  Statement s(handle(), path_, fmt::format("SELECT {} FROM points WHERE {} AND knobs = ?8", kPointColumns, kKeyMatch),
              "looking up a point");
  bind_key(s, key);
  s.text(8, knobs);
  if (!s.step()) return std::nullopt;
  return read_point(s, 0);
}

std::vector<Database::Entry> Database::list() const {
  Transaction tx(handle(), path_, false);  // one snapshot for the keys and their best points
  Statement keys(handle(), path_,
                 fmt::format("SELECT {0}, COUNT(*), SUM(ok = 1), MAX(measured_at) FROM points GROUP BY {0} "
                             "ORDER BY file, op, target, shape_class, device, dtype, op_hash",
                             kKeyColumns),
                 "listing keys");
  Statement best(handle(), path_,
                 fmt::format("SELECT {} FROM points WHERE {} AND ok = 1 ORDER BY {} LIMIT 1", kPointColumns, kKeyMatch,
                             kPointOrder),
                 "reading the best point");
  std::vector<Entry> out;
  while (keys.step()) {
    Entry e;
    e.key = {keys.column_text(0), keys.column_text(1), keys.column_text(2), keys.column_text(3),
             keys.column_text(4), keys.column_text(5), keys.column_text(6)};
    e.points = static_cast<int>(keys.column_integer(7));
    e.ok_points = static_cast<int>(keys.column_integer(8));
    e.last_measured = keys.column_text(9);
    best.reset();
    bind_key(best, e.key);
    if (best.step()) e.best = read_point(best, 0);
    out.push_back(std::move(e));
  }
  tx.commit();
  return out;
}

int Database::forget(const TuneKey& key) {
  Statement s(handle(), path_, fmt::format("DELETE FROM points WHERE {}", kKeyMatch), "forgetting a key");
  bind_key(s, key);
  s.run();
  return sqlite3_changes(handle());
}

sqlite3* Database::handle() const {
  if (!db_) throw DatabaseError("tuning database: used after being moved from");
  return db_.get();
}

}  // namespace emmy::tune
