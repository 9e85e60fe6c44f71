// Unit tests of the tuning database: round trips, replacement, ordering, keys, listing, forgetting,
// the default path, and the files it refuses.
#include <doctest/doctest.h>

#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tune/database.hpp"

namespace fs = std::filesystem;
using namespace emmy::tune;

namespace {

// A fresh directory under the system's temporary folder, removed at scope exit.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("emmy-tune-db-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// Sets (or unsets, for nullopt) an environment variable and restores it at scope exit.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> saved;
  ScopedEnv(std::string n, const std::optional<std::string>& value) : name(std::move(n)) {
    if (const char* old = std::getenv(name.c_str())) saved = old;
    if (value)
      ::setenv(name.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (saved)
      ::setenv(name.c_str(), saved->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

TuneKey sdpa_key() {
  return {"9f2c41d0", "sdpa", "examples/sdpa.emmy", "sm_90", "NVIDIA H200", "B=1,D=64,H=8,S=4096", "f16"};
}

Point ok_point(const std::string& knobs, double time_us) {
  Point p;
  p.knobs = knobs;
  p.ok = true;
  p.time_us = time_us;
  p.registers = 128;
  p.smem_bytes = 49152;
  p.occupancy = 0.25;
  p.measured_at = "2025-01-02 03:04:05";
  return p;
}

Point failed_point(const std::string& knobs, const std::string& error) {
  Point p;
  p.knobs = knobs;
  p.error = error;
  p.measured_at = "2025-01-02 03:04:05";
  return p;
}

std::vector<std::string> knobs_of(const std::vector<Point>& points) {
  std::vector<std::string> out;
  for (const Point& p : points) out.push_back(p.knobs);
  return out;
}

// The message of the DatabaseError that opening PATH throws, or "" when it opens.
std::string open_error(const std::string& path) {
  try {
    Database::open(path);
  } catch (const DatabaseError& e) {
    return e.what();
  }
  return "";
}

// Runs SQL on the file directly, beside the Database class.
void raw_exec(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  std::string message = sqlite3_errmsg(db);
  sqlite3_close(db);
  REQUIRE_MESSAGE(rc == SQLITE_OK, message);
}

}  // namespace

TEST_CASE("tune database: every field of a point survives closing and reopening") {
  TempDir dir("round-trip");
  const std::string path = dir.file("nested/deeper/tune.sqlite");  // parent directories are created
  const TuneKey key = sdpa_key();

  Point full;
  full.knobs = "PLACE = fuse; TILE = a:mma_m16n8k16_f16/w4x1/f2x8/k4; 'quoted' \"and\" ; DROP TABLE points; --";
  full.ok = true;
  full.time_us = 123.456789012345;
  full.registers = 168;
  full.smem_bytes = int64_t{1} << 40;
  full.occupancy = 0.1875;
  full.measured_at = "2024-12-31 23:59:59";

  Point failed;
  failed.knobs = "TILE = a:mma_m16n8k16_f16/w8x1/f4x8/k4";
  failed.registers = 255;
  failed.error = "ptxas: too much shared memory (0x3a000 bytes, max 0x39000) — unicode: μs";
  failed.measured_at = "2024-12-30 00:00:00";

  Point stamped = ok_point("TILE = a:mma_m16n8k16_f16/w2x1/f2x4/k2", 7.5);
  stamped.measured_at.clear();  // record() fills it

  Point cut;  // cut off after one launch: not ok, not failed, its one launch kept
  cut.knobs = "PLACE = cut; TILE = a:scalar";
  cut.cut_off = true;
  cut.time_us = 76000.5;
  cut.error = "cut off: one launch took 76000.5 us, over the cut-off of 10000.0 us";
  cut.measured_at = "2024-12-30 00:00:01";

  {
    Database db = Database::open(path);
    CHECK(db.path() == path);
    db.record(key, full);
    db.record(key, failed);
    db.record(key, stamped);
    db.record(key, cut);
  }
  CHECK(fs::exists(path));

  Database reopened = Database::open(path);
  Database db = std::move(reopened);  // movable
  CHECK(db.path() == path);
  std::optional<Point> got = db.lookup(key, full.knobs);
  REQUIRE(got);
  CHECK(got->knobs == full.knobs);
  CHECK(got->ok);
  CHECK(!got->cut_off);
  REQUIRE(got->time_us);
  CHECK(*got->time_us == full.time_us);  // a REAL keeps every bit of a double
  CHECK(got->registers == 168);
  CHECK(got->smem_bytes == int64_t{1} << 40);
  CHECK(got->occupancy == 0.1875);
  CHECK(got->error == "");
  CHECK(got->measured_at == "2024-12-31 23:59:59");
  CHECK(*got == full);

  got = db.lookup(key, failed.knobs);
  REQUIRE(got);
  CHECK(!got->ok);
  CHECK(!got->cut_off);
  CHECK(!got->time_us);
  CHECK(got->registers == 255);
  CHECK(got->smem_bytes == 0);
  CHECK(got->occupancy == 0.0);
  CHECK(got->error == failed.error);
  CHECK(*got == failed);

  got = db.lookup(key, stamped.knobs);
  REQUIRE(got);
  REQUIRE(got->measured_at.size() == 19);  // "YYYY-MM-DD HH:MM:SS", now
  CHECK(got->measured_at[4] == '-');
  CHECK(got->measured_at[10] == ' ');
  CHECK(got->measured_at[16] == ':');
  CHECK(got->measured_at.substr(0, 2) == "20");
  CHECK(got->measured_at > "2025-01-01 00:00:00");
  stamped.measured_at = got->measured_at;
  CHECK(*got == stamped);

  got = db.lookup(key, cut.knobs);
  REQUIRE(got);
  CHECK(!got->ok);
  CHECK(got->cut_off);
  REQUIRE(got->time_us);
  CHECK(*got->time_us == 76000.5);
  CHECK(*got == cut);

  CHECK(db.points(key).size() == 4);
  // A cut-off point is neither the best nor counted as ok.
  std::vector<Database::Entry> entries = db.list();
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].points == 4);
  CHECK(entries[0].ok_points == 2);
  REQUIRE(entries[0].best);
  CHECK(entries[0].best->knobs == stamped.knobs);
}

TEST_CASE("tune database: recording the same knobs twice keeps one point with the newer values") {
  TempDir dir("replace");
  Database db = Database::open(dir.file("tune.sqlite"));
  const TuneKey key = sdpa_key();
  db.record(key, ok_point("TILE = a", 50.0));
  db.record(key, ok_point("TILE = b", 60.0));

  Point newer = failed_point("TILE = a", "mismatch at o[0,0,3,1]: 0.5 vs 0.25");
  newer.registers = 96;
  newer.measured_at = "2025-02-03 04:05:06";
  db.record(key, newer);

  std::vector<Point> points = db.points(key);
  REQUIRE(points.size() == 2);
  CHECK(points[0].knobs == "TILE = b");
  CHECK(points[1] == newer);
  CHECK(!points[1].time_us);  // the old time does not linger

  db.record_all(key, {ok_point("TILE = a", 40.0), ok_point("TILE = a", 30.0)});  // the last one wins
  points = db.points(key);
  REQUIRE(points.size() == 2);
  CHECK(points[0].knobs == "TILE = a");
  CHECK(points[0].time_us == 30.0);
  CHECK(points[0].error == "");
}

TEST_CASE("tune database: points() gives ok points by time ascending, then failed points by knobs") {
  TempDir dir("order");
  Database db = Database::open(dir.file("tune.sqlite"));
  const TuneKey key = sdpa_key();
  db.record(key, failed_point("k=c", "did not compile"));
  db.record(key, ok_point("k=z", 30.0));
  db.record(key, failed_point("k=a", "timed out"));
  db.record(key, ok_point("k=y", 10.0));
  db.record(key, ok_point("k=x", 20.0));
  db.record(key, ok_point("k=w", 20.0));  // a tie in time: knobs decide
  Point timeless = ok_point("k=v", 0.0);
  timeless.time_us.reset();  // ok without a time: after every timed ok point
  db.record(key, timeless);
  Point failed_with_time = failed_point("k=b", "mismatch");
  failed_with_time.time_us = 1.0;  // a failed point's time does not move it ahead
  db.record(key, failed_with_time);

  std::vector<Point> points = db.points(key);
  CHECK(knobs_of(points) == std::vector<std::string>{"k=y", "k=w", "k=x", "k=z", "k=v", "k=a", "k=b", "k=c"});
  REQUIRE(points.size() == 8);
  CHECK(points[0].time_us == 10.0);
  CHECK(points[3].time_us == 30.0);
  CHECK(points[5].error == "timed out");

  TuneKey other = key;
  other.dtype = "bf16";
  CHECK(db.points(other).empty());
}

TEST_CASE("tune database: lookup finds recorded knobs and misses the others") {
  TempDir dir("lookup");
  Database db = Database::open(dir.file("tune.sqlite"));
  const TuneKey key = sdpa_key();
  CHECK(!db.lookup(key, "TILE = a"));  // an empty database
  db.record(key, ok_point("TILE = a", 12.0));

  std::optional<Point> hit = db.lookup(key, "TILE = a");
  REQUIRE(hit);
  CHECK(hit->time_us == 12.0);
  CHECK(!db.lookup(key, "TILE = b"));
  CHECK(!db.lookup(key, "TILE = a "));  // knobs are compared exactly
  CHECK(!db.lookup(key, "tile = a"));
  CHECK(!db.lookup(key, ""));
  TuneKey other = key;
  other.target = "sm_90a";
  CHECK(!db.lookup(other, "TILE = a"));
}

TEST_CASE("tune database: keys differing in any one field are separate problems") {
  TempDir dir("keys");
  Database db = Database::open(dir.file("tune.sqlite"));
  const TuneKey base = sdpa_key();
  db.record(base, ok_point("TILE = a", 100.0));

  std::string TuneKey::*fields[] = {&TuneKey::op_hash, &TuneKey::op,          &TuneKey::file, &TuneKey::target,
                                    &TuneKey::device,  &TuneKey::shape_class, &TuneKey::dtype};
  double time = 1.0;
  for (std::string TuneKey::*field : fields) {
    TuneKey other = base;
    other.*field += "'";
    CAPTURE(other.*field);
    CHECK(db.points(other).empty());
    db.record(other, ok_point("TILE = a", time));  // the same knobs under another key
    std::vector<Point> points = db.points(other);
    REQUIRE(points.size() == 1);
    CHECK(points[0].time_us == time);
    time += 1.0;
  }
  std::vector<Point> points = db.points(base);
  REQUIRE(points.size() == 1);
  CHECK(points[0].time_us == 100.0);  // untouched by the other keys
  CHECK(db.list().size() == 8);
}

TEST_CASE("tune database: list() counts points, picks the best and orders by file, op, target, shape class") {
  TempDir dir("list");
  Database db = Database::open(dir.file("tune.sqlite"));
  CHECK(db.list().empty());

  TuneKey sdpa = sdpa_key();  // examples/sdpa.emmy
  TuneKey matmul{"77aa", "matmul", "examples/matmul.emmy", "sm_90", "NVIDIA H200", "M=4096,N=4096,K=4096", "f16"};
  TuneKey matmul_80 = matmul;
  matmul_80.target = "sm_80";
  TuneKey matmul_small = matmul;
  matmul_small.shape_class = "M=128,N=128,K=128";
  TuneKey gemv = matmul;
  gemv.op = "gemv";
  gemv.shape_class = "M=4096,N=1,K=4096";

  Point a = ok_point("TILE = a", 30.0);
  a.measured_at = "2025-03-01 10:00:00";
  Point b = ok_point("TILE = b", 20.0);
  b.measured_at = "2025-03-01 09:00:00";
  Point c = failed_point("TILE = c", "did not compile");
  c.measured_at = "2025-03-02 08:00:00";
  db.record_all(sdpa, {a, b, c});
  db.record(matmul, ok_point("TILE = m", 900.0));
  db.record(matmul_80, failed_point("TILE = m", "no wgmma on sm_80"));
  db.record(matmul_small, ok_point("TILE = s", 8.0));
  db.record(gemv, ok_point("TILE = g", 44.0));

  std::vector<Database::Entry> entries = db.list();
  REQUIRE(entries.size() == 5);
  // examples/matmul.emmy before examples/sdpa.emmy; gemv before matmul; sm_80 before sm_90; then the shape class.
  CHECK(entries[0].key == gemv);
  CHECK(entries[1].key == matmul_80);
  CHECK(entries[2].key == matmul_small);  // "M=128,..." < "M=4096,...": the text, not the numbers
  CHECK(entries[3].key == matmul);
  CHECK(entries[4].key == sdpa);

  const Database::Entry& e = entries[4];
  CHECK(e.points == 3);
  CHECK(e.ok_points == 2);
  REQUIRE(e.best);
  CHECK(*e.best == b);
  CHECK(e.last_measured == "2025-03-02 08:00:00");  // the failed point is the latest

  CHECK(entries[1].points == 1);
  CHECK(entries[1].ok_points == 0);
  CHECK(!entries[1].best);  // no ok point, no best
  REQUIRE(entries[3].best);
  CHECK(entries[3].best->knobs == "TILE = m");
  CHECK(entries[3].best->time_us == 900.0);
}

TEST_CASE("tune database: forget deletes a key's points and returns how many") {
  TempDir dir("forget");
  Database db = Database::open(dir.file("tune.sqlite"));
  const TuneKey key = sdpa_key();
  TuneKey other = key;
  other.shape_class = "B=2,D=128,H=16,S=8192";
  db.record_all(key, {ok_point("k=1", 1.0), ok_point("k=2", 2.0), failed_point("k=3", "x")});
  db.record(other, ok_point("k=1", 5.0));

  CHECK(db.forget(key) == 3);
  CHECK(db.points(key).empty());
  CHECK(!db.lookup(key, "k=1"));
  CHECK(db.points(other).size() == 1);  // another key keeps its points
  CHECK(db.forget(key) == 0);           // already gone
  REQUIRE(db.list().size() == 1);
  CHECK(db.list()[0].key == other);
  CHECK(db.forget(other) == 1);
  CHECK(db.list().empty());
}

TEST_CASE("tune database: default_path prefers $EMMY_TUNE_DB, then $XDG_CACHE_HOME, then $HOME") {
  ScopedEnv tune("EMMY_TUNE_DB", "/data/tune/emmy.sqlite");
  ScopedEnv xdg("XDG_CACHE_HOME", "/xdg/cache");
  ScopedEnv home("HOME", "/home/user");
  CHECK(Database::default_path() == "/data/tune/emmy.sqlite");
  {
    ScopedEnv empty("EMMY_TUNE_DB", "");  // empty counts as unset
    CHECK(Database::default_path() == "/xdg/cache/emmy/tune.sqlite");
    ScopedEnv no_xdg("XDG_CACHE_HOME", std::nullopt);
    CHECK(Database::default_path() == "/home/user/.cache/emmy/tune.sqlite");
    ScopedEnv no_home("HOME", std::nullopt);
    CHECK(Database::default_path() == "");
    CHECK(open_error("").find("no tuning database path") != std::string::npos);
  }
  CHECK(Database::default_path() == "/data/tune/emmy.sqlite");  // restored
}

TEST_CASE("tune database: opening an unwritable path throws a DatabaseError naming the path") {
  TempDir dir("unwritable");
  fs::create_directories(dir.path);
  const fs::path plain = dir.path / "plain-file";
  std::ofstream(plain) << "not a directory\n";
  const std::string path = (plain / "tune.sqlite").string();  // under a regular file
  std::string message = open_error(path);
  CAPTURE(message);
  CHECK(message.find(path) != std::string::npos);
  CHECK(message.find("cannot create the directory") != std::string::npos);

  const std::string directory = (dir.path / "a-directory").string();  // the path is a directory
  fs::create_directories(directory);
  message = open_error(directory);
  CAPTURE(message);
  CHECK(message.find(directory) != std::string::npos);
}

TEST_CASE("tune database: a file of another schema version, or not a tuning database, is refused") {
  TempDir dir("version");
  const std::string path = dir.file("tune.sqlite");
  {
    Database db = Database::open(path);
    db.record(sdpa_key(), ok_point("TILE = a", 1.0));
  }
  raw_exec(path, "UPDATE meta SET value = '2' WHERE name = 'schema_version'");
  std::string message = open_error(path);
  CAPTURE(message);
  CHECK(message.find("has schema version 2") != std::string::npos);
  CHECK(message.find("reads version 1") != std::string::npos);
  CHECK(message.find("delete " + path) != std::string::npos);

  raw_exec(path, "UPDATE meta SET value = '1' WHERE name = 'schema_version'");  // back to this version: opens
  CHECK(Database::open(path).points(sdpa_key()).size() == 1);

  const std::string garbage = dir.file("garbage.sqlite");
  std::ofstream(garbage) << std::string(4096, 'x');
  message = open_error(garbage);
  CAPTURE(message);
  CHECK(message.find(garbage) != std::string::npos);
  CHECK(message.find("file is not a database") != std::string::npos);

  const std::string foreign = dir.file("foreign.sqlite");
  raw_exec(foreign, "CREATE TABLE recipes (name TEXT)");
  message = open_error(foreign);
  CAPTURE(message);
  CHECK(message.find(foreign + " is not an Emmy tuning database") != std::string::npos);
}

TEST_CASE("tune database: record_all of 200 points lands in one transaction") {
  TempDir dir("record-all");
  const std::string path = dir.file("tune.sqlite");
  Database db = Database::open(path);
  const TuneKey key = sdpa_key();
  std::vector<Point> batch;
  for (int i = 0; i < 200; ++i) {
    Point p = i % 10 == 9 ? failed_point(fmt::format("k={:03}", i), "failed")
                          : ok_point(fmt::format("k={:03}", i), 200.0 - i);
    p.measured_at.clear();
    batch.push_back(p);
  }
  auto start = std::chrono::steady_clock::now();
  db.record_all(key, batch);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 5.0);

  std::vector<Point> points = db.points(key);
  REQUIRE(points.size() == 200);
  CHECK(points[0].knobs == "k=198");  // the fastest ok point
  CHECK(points[0].time_us == 2.0);
  CHECK(points[179].knobs == "k=000");  // the slowest ok point
  CHECK(points[180].knobs == "k=009");  // then the 20 failed ones by knobs
  CHECK(points[199].knobs == "k=199");
  for (const Point& p : points) CHECK(p.measured_at == points[0].measured_at);  // one stamp for the batch

  // One commit writes each touched page once to the write-ahead log; 200 commits would write
  // every leaf page 200 times (several MB).
  const fs::path wal = path + "-wal";
  REQUIRE(fs::exists(wal));
  CHECK(fs::file_size(wal) < 512 * 1024);

  std::vector<Database::Entry> entries = db.list();
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].points == 200);
  CHECK(entries[0].ok_points == 180);
  db.record_all(key, {});  // nothing to record
  CHECK(db.points(key).size() == 200);
}
